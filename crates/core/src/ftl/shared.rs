//! Pieces the experiment FTLs (Telomere, WAO-GC) share: the logical-range
//! checks and the host read of a mapped page.

use crate::device::{FlashArray, Geometry};
use crate::ftl::{FlashOpKind, FtlError, Recorder};
use crate::metrics::Counters;
use crate::units::{Lpn, Ppn};

pub(crate) fn check_lpn(geometry: &Geometry, lpn: Lpn) -> Result<(), FtlError> {
    if lpn.0 >= geometry.logical_pages {
        return Err(FtlError::LpnOutOfRange { lpn: u64::from(lpn.0), logical_pages: geometry.logical_pages });
    }
    Ok(())
}

/// The logical pages a trim of `pages` pages from `first` covers, once the
/// last of them is checked against the device.
pub(crate) fn trim_range(geometry: &Geometry, first: Lpn, pages: u32) -> Result<std::ops::Range<u32>, FtlError> {
    if pages > 0 {
        check_lpn(geometry, Lpn(first.0.saturating_add(pages - 1)))?;
    }
    Ok(first.0..first.0 + pages)
}

/// A host read of the mapped page `ppn`: the flash checks it was programmed.
pub(crate) fn read_mapped(
    flash: &FlashArray,
    ppn: Ppn,
    counters: &mut Counters,
    recorder: &mut Recorder,
) -> Result<Ppn, FtlError> {
    flash.read(ppn)?;
    let geometry = flash.geometry();
    recorder.record(FlashOpKind::Read, geometry.unit_of_block(geometry.block_of_page(ppn)), false);
    counters.host_pages_read += 1;
    counters.flash_pages_read += 1;
    Ok(ppn)
}
