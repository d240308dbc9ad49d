//! Background GC scheduling: a die below the low watermark collects one
//! victim at a time in its idle time.

use super::{Engine, NO_JOB};
use crate::ftl::{FtlError, TranslationLayer};
use crate::units::UnitId;

impl Engine {
    /// One background GC step on the first unit of `die` below the low
    /// watermark: the FTL reclaims a victim now, the die pays for it as its
    /// idle time allows. Out of line: it runs once per victim, not per command.
    #[inline(never)]
    pub(super) fn plan_background_gc<T: TranslationLayer>(&mut self, ftl: &mut T, die: u32) -> Result<(), FtlError> {
        if self.draining || self.dies[die as usize].futile_gc_epoch == Some(self.host_epoch) {
            return Ok(());
        }
        let dies = self.geometry.dies();
        for plane in 0..self.geometry.planes_per_die {
            let unit = UnitId(die + plane * dies);
            let free_before = ftl.free_blocks(unit);
            if free_before < self.gc_low_blocks && ftl.collect_one(unit)? {
                if ftl.free_blocks(unit) <= free_before {
                    self.dies[die as usize].futile_gc_epoch = Some(self.host_epoch);
                }
                let geometry = &self.geometry;
                let queued = ftl.recorded().iter().map(|&op| Self::queued(geometry, op, NO_JOB).1);
                let gc_ops = &mut self.dies[die as usize].gc_ops;
                for op in queued {
                    gc_ops.push_back(op);
                }
                ftl.clear_recorded();
                return Ok(());
            }
        }
        Ok(())
    }

    pub(super) fn wake_idle_dies<T: TranslationLayer>(&mut self, ftl: &mut T) -> Result<(), FtlError> {
        for die in 0..self.geometry.dies() {
            if !self.dies[die as usize].busy {
                self.start_next(ftl, die)?;
            }
        }
        Ok(())
    }
}
