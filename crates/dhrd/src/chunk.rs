//! One chunk of the RAM image and its initialization state machine (paper section 3.3).
//!
//! A chunk is `Uninitialized` (RAM holds nothing yet; the backing store is the only copy),
//! `Initializing` (the copier is filling RAM from the backing store) or `Initialized` (RAM mirrors
//! the backing store). The phase mutex and condition variable give the paper's locking:
//! - write case 1: a write to an `Initializing` chunk blocks until the copy completes;
//! - write case 2: a write to an `Initialized` chunk goes to the backing store and to RAM;
//! - write case 3: a write to an `Uninitialized` chunk goes to the backing store only and holds the
//!   chunk (a writer count) so the copier cannot start on it until the write finishes;
//! - read case 1: a read of an `Initialized` chunk is served from RAM;
//! - read case 2: a read of an `Initializing` or `Uninitialized` chunk is served from the backing
//!   store.
//!
//! `write_order` serialises writes within a chunk so the backing store and RAM see overlapping
//! writes in the same order; readers never take it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::aligned::AlignedBuf;

/// Initialization state of one chunk, as reported to callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkState {
    Uninitialized,
    Initializing,
    Initialized,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Uninitialized { backing_writers: u32 },
    Initializing,
    Initialized,
}

/// Where a write to a chunk must go (section 3.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteRoute {
    /// Case 2 (and case 1 after waiting): backing store, then RAM.
    Mirror { waited_for_copy: bool },
    /// Case 3: backing store only; the copier brings the data into RAM later.
    BackingOnly,
}

pub(crate) struct Chunk {
    phase: Mutex<Phase>,
    phase_changed: Condvar,
    /// Lock-free fast path for reads once the chunk is initialized (it never goes back).
    initialized: AtomicBool,
    /// Empty until the copier allocates and fills it, so opening a large image costs no allocation.
    ram: RwLock<AlignedBuf>,
    len: usize,
    write_order: Mutex<()>,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; recover the data rather than cascade a panic.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Chunk {
    pub(crate) fn new(len: usize) -> Chunk {
        Chunk {
            phase: Mutex::new(Phase::Uninitialized { backing_writers: 0 }),
            phase_changed: Condvar::new(),
            initialized: AtomicBool::new(false),
            ram: RwLock::new(AlignedBuf::empty()),
            len,
            write_order: Mutex::new(()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
    }

    pub(crate) fn state(&self) -> ChunkState {
        match *lock(&self.phase) {
            Phase::Uninitialized { .. } => ChunkState::Uninitialized,
            Phase::Initializing => ChunkState::Initializing,
            Phase::Initialized => ChunkState::Initialized,
        }
    }

    pub(crate) fn ram(&self) -> RwLockReadGuard<'_, AlignedBuf> {
        self.ram.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn ram_mut(&self) -> RwLockWriteGuard<'_, AlignedBuf> {
        self.ram.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn order_writes(&self) -> MutexGuard<'_, ()> {
        lock(&self.write_order)
    }

    /// Classifies a write (cases 1-3). A `BackingOnly` route must be closed with `end_backing_write`.
    pub(crate) fn begin_write(&self) -> WriteRoute {
        let mut phase = lock(&self.phase);
        let mut waited_for_copy = false;
        loop {
            match &mut *phase {
                Phase::Initialized => return WriteRoute::Mirror { waited_for_copy },
                Phase::Uninitialized { backing_writers } => {
                    *backing_writers += 1;
                    return WriteRoute::BackingOnly;
                }
                Phase::Initializing => {
                    waited_for_copy = true;
                    phase = self.phase_changed.wait(phase).unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }

    pub(crate) fn end_backing_write(&self) {
        let mut phase = lock(&self.phase);
        if let Phase::Uninitialized { backing_writers } = &mut *phase {
            debug_assert!(*backing_writers > 0);
            *backing_writers -= 1;
        }
        drop(phase);
        self.phase_changed.notify_all();
    }

    /// Moves the chunk to `Initializing`, first waiting for case-3 writers to finish (the paper's
    /// suspended initialization). Returns whether the copier had to wait.
    pub(crate) fn begin_copy(&self) -> bool {
        let mut phase = lock(&self.phase);
        let mut waited = false;
        while let Phase::Uninitialized { backing_writers } = *phase {
            if backing_writers == 0 {
                *phase = Phase::Initializing;
                return waited;
            }
            waited = true;
            phase = self.phase_changed.wait(phase).unwrap_or_else(PoisonError::into_inner);
        }
        waited
    }

    /// Ends a copy: `Initialized` on success, back to `Uninitialized` (served from the backing
    /// store) on failure. Wakes writers blocked in case 1.
    pub(crate) fn finish_copy(&self, copied: bool) {
        let mut phase = lock(&self.phase);
        debug_assert_eq!(*phase, Phase::Initializing);
        if copied {
            *phase = Phase::Initialized;
            self.initialized.store(true, Ordering::Release);
        } else {
            *phase = Phase::Uninitialized { backing_writers: 0 };
        }
        drop(phase);
        self.phase_changed.notify_all();
    }
}
