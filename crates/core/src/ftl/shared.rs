//! Pieces the experiment FTLs (Telomere, WAO-GC) share: recording of flash
//! operations for timed runs, the logical-range check, and the host read of
//! a mapped page.

use crate::device::{FlashArray, Geometry};
use crate::ftl::{FlashOp, FlashOpKind, FtlError};
use crate::metrics::Counters;
use crate::units::{Lpn, Ppn, UnitId};

/// Flash operations since the last drain, when recording is on.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpRecorder(Option<Vec<FlashOp>>);

impl OpRecorder {
    pub(crate) fn set(&mut self, on: bool) {
        self.0 = on.then(Vec::new);
    }

    pub(crate) fn record(&mut self, kind: FlashOpKind, unit: UnitId, gc: bool) {
        if let Some(ops) = &mut self.0 {
            ops.push(FlashOp { kind, unit, gc });
        }
    }

    pub(crate) fn drain_into(&mut self, into: &mut Vec<FlashOp>) {
        if let Some(ops) = &mut self.0 {
            into.append(ops);
        }
    }
}

pub(crate) fn check_lpn(geometry: &Geometry, lpn: Lpn) -> Result<(), FtlError> {
    if lpn.0 >= geometry.logical_pages {
        return Err(FtlError::LpnOutOfRange { lpn: u64::from(lpn.0), logical_pages: geometry.logical_pages });
    }
    Ok(())
}

/// A host read of the mapped page `ppn`: the flash checks it was programmed.
pub(crate) fn read_mapped(
    flash: &FlashArray,
    ppn: Ppn,
    counters: &mut Counters,
    recorder: &mut OpRecorder,
) -> Result<Ppn, FtlError> {
    flash.read(ppn)?;
    let geometry = flash.geometry();
    recorder.record(FlashOpKind::Read, geometry.unit_of_block(geometry.block_of_page(ppn)), false);
    counters.host_pages_read += 1;
    counters.flash_pages_read += 1;
    Ok(ppn)
}
