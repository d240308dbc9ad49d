//! The translation-layer boundary: what the driver and the timing engine ask
//! of whatever maps logical pages onto flash — the device-side page-mapped
//! FTL ([`super::PageFtl`]), the host-level FTL over an open-channel device
//! ([`crate::host::pblk::Pblk`]), Telomere's lifetime-aware placement FTL
//! ([`super::telomere::TelomereFtl`]) and WAO-GC ([`super::wao_gc::WaoGcFtl`]).

use crate::device::Geometry;
use crate::ftl::{FlashOp, FlashOpKind, FtlError, InvariantError};
use crate::metrics::Counters;
use crate::units::{Lpn, SimNs, StreamId, UnitId};

/// A translation layer: logical pages in, flash operations out.
///
/// Contract:
/// - Every call updates the mapping at once (the call *is* the decision) and,
///   while recording is on, appends the flash operations it caused — host
///   operations and any garbage collection it ran inline — to
///   [`Self::recorded`], in the order the flash must perform them. The timing
///   engine decides *when* they happen; counting mode ignores them.
/// - The layer enforces nothing about time and never reads a clock. It
///   learns the time only through [`Self::advance`], which the driver calls
///   with each request's arrival before submitting it; a layer whose data
///   expire by time (Telomere's placement FTL) reclaims what expired there,
///   recording the erases like any other operation, and says so through
///   [`Self::follows_time`] (the driver then submits requests strictly one
///   event at a time). Every other layer ignores time.
/// - `write` takes a placement hint (the stream the host stages chose); a
///   layer may ignore it but must refuse a stream it was not configured for.
/// - `read` of a page that holds no data (never written, or trimmed) performs
///   no flash operation and counts it in [`Counters::unmapped_reads`].
/// - `flush` makes every write accepted so far durable on flash (a layer with
///   a host-side buffer programs it, padded as its device requires); the
///   device-side FTL has nothing buffered and does nothing.
/// - `collect_one` performs at most one background GC step in `unit` and says
///   whether it reclaimed a block; a layer without background GC declines.
/// - Counters only grow; the flash underneath refuses any violation of the
///   flash rules with an error, so a layer cannot break them silently.
/// - After every call that returned `Ok`, [`Self::check_invariants`] holds:
///   the layer's own bookkeeping agrees with itself and with the flash.
pub trait TranslationLayer {
    fn geometry(&self) -> &Geometry;
    fn counters(&self) -> &Counters;
    /// Erase count of every block (chunk) of the flash underneath.
    fn erase_counts(&self) -> &[u32];
    /// Heap bytes the layer and its flash model hold.
    fn memory_bytes(&self) -> usize;

    /// Counts one host request of any kind, for per-request statistics.
    fn count_request(&mut self);
    fn write(&mut self, lpn: Lpn, stream: StreamId) -> Result<(), FtlError>;
    fn read(&mut self, lpn: Lpn) -> Result<(), FtlError>;
    fn trim(&mut self, first: Lpn, pages: u32) -> Result<(), FtlError>;
    fn flush(&mut self) -> Result<(), FtlError>;
    /// Whether `lpn` holds data (for read-modify-write of mapping units).
    fn is_mapped(&self, lpn: Lpn) -> bool;

    /// Free blocks in `unit`, which the engine's cleaning watermarks compare against.
    fn free_blocks(&self, unit: UnitId) -> u32;
    fn collect_one(&mut self, unit: UnitId) -> Result<bool, FtlError>;

    /// Time moved to `now` (never backwards): reclaim what expired.
    #[inline]
    fn advance(&mut self, _now: SimNs) -> Result<(), FtlError> {
        Ok(())
    }

    /// Whether [`Self::advance`] matters to this layer.
    #[inline]
    fn follows_time(&self) -> bool {
        false
    }

    /// Turns recording of flash operations on or off (off: counting mode pays nothing).
    fn set_recording(&mut self, on: bool);
    /// The flash operations recorded since the last [`Self::clear_recorded`], in order.
    fn recorded(&self) -> &[FlashOp];
    fn clear_recorded(&mut self);

    /// Checks the layer's whole state and names the first invariant broken
    /// ([`Invariant`](crate::ftl::Invariant)): the forward and reverse maps agree, valid counts
    /// match the live pages, free, open and sealed blocks add up to the
    /// geometry, the write points follow the stream and open-block rules,
    /// and whatever the layer adds (Telomere's placement, pblk's lines and
    /// write buffer, WAO-GC's victims, the DFTL mode's map cache). It walks
    /// every page: for tests and `verify` builds ([`super::Checked`] runs
    /// it after every call), never on a hot path.
    fn check_invariants(&self) -> Result<(), InvariantError>;

    /// Hint: `lpn` will be accessed soon (fetch its mapping entry into cache).
    #[inline]
    fn prefetch_mapping(&self, _lpn: Lpn) {}
    /// Hint: `lpn` will be overwritten soon (fetch the entry of its old page).
    #[inline]
    fn prefetch_old_page(&self, _lpn: Lpn) {}
}

/// Keeps a layer's recorded flash operations: `None` while recording is off.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    ops: Option<Vec<FlashOp>>,
}

impl Recorder {
    pub fn set(&mut self, on: bool) {
        self.ops = on.then(Vec::new);
    }

    #[inline]
    pub fn record(&mut self, kind: FlashOpKind, unit: UnitId, gc: bool) {
        if let Some(ops) = &mut self.ops {
            ops.push(FlashOp { kind, unit, gc });
        }
    }

    /// Records `copies` GC copies in `unit`: a read, then a program, each.
    #[inline]
    pub fn record_copies(&mut self, unit: UnitId, copies: usize) {
        if let Some(ops) = &mut self.ops {
            for _ in 0..copies {
                ops.push(FlashOp { kind: FlashOpKind::Read, unit, gc: true });
                ops.push(FlashOp { kind: FlashOpKind::Program, unit, gc: true });
            }
        }
    }

    pub fn ops(&self) -> &[FlashOp] {
        self.ops.as_deref().unwrap_or_default()
    }

    pub fn clear(&mut self) {
        if let Some(ops) = &mut self.ops {
            ops.clear();
        }
    }

    /// Moves the recorded operations out (recording stays as it is).
    pub fn drain(&mut self) -> impl Iterator<Item = FlashOp> + '_ {
        self.ops.iter_mut().flat_map(|ops| ops.drain(..))
    }

    pub fn drain_into(&mut self, into: &mut Vec<FlashOp>) {
        if let Some(ops) = &mut self.ops {
            into.append(ops);
        }
    }
}
