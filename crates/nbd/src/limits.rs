//! What one export lets its clients hold: connections, bytes of request data in memory, time to
//! finish the handshake. Every local user who can reach the socket can connect, so these bound the
//! daemon's memory whatever the clients do (docs/emulate.md, "NBD limits").

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// Bounds on what the clients of one export may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once; one more is closed as soon as it is accepted.
    pub max_connections: usize,
    /// Bytes of READ and WRITE data held in memory by all connections together; a request that
    /// would pass it waits until others have been answered. At least one largest request.
    pub max_buffered_bytes: u64,
    /// Request threads of all connections together, which serve requests concurrently (several
    /// in flight per connection); a connection that gets none serves one request at a time.
    pub max_request_threads: usize,
    /// A client that has not finished the handshake by then is disconnected, so idle connections
    /// cannot keep the slots of real clients.
    pub handshake_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 256,
            max_buffered_bytes: 256 << 20,
            max_request_threads: 256,
            handshake_timeout: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// Memory the export may use at most beyond the device's own: every connection's thread
    /// stack and socket buffers, the request threads' stacks, and the shared budget of request data.
    #[must_use]
    pub fn memory_bound_bytes(&self) -> u64 {
        let per_connection = CONNECTION_STACK_BYTES + 2 * SOCKET_BUFFER_BYTES;
        let request_threads = (self.max_request_threads as u64).saturating_mul(CONNECTION_STACK_BYTES as u64);
        (self.max_connections as u64)
            .saturating_mul(per_connection as u64)
            .saturating_add(request_threads)
            .saturating_add(self.max_buffered_bytes)
    }

    /// Refuses limits no client could work under.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.max_connections == 0 {
            return Err("max_connections must be at least 1".into());
        }
        if self.max_buffered_bytes < u64::from(MAX_REQUEST_BYTES) {
            return Err(format!(
                "max_buffered_bytes {} is below one largest request ({MAX_REQUEST_BYTES} bytes)",
                self.max_buffered_bytes
            ));
        }
        if self.handshake_timeout.is_zero() {
            return Err("handshake_timeout must be positive".into());
        }
        Ok(())
    }
}

/// Largest READ or WRITE served (the maximum block size advertised): its data is held in memory.
/// A longer one is answered with EINVAL and the connection goes on (proto.md, "Block size
/// constraints"). TRIM and WRITE_ZEROES carry no data and may be of any length.
pub(crate) const MAX_REQUEST_BYTES: u32 = 32 << 20;
/// Stack of each connection's thread and of each request thread: requests keep their data on the heap.
pub(crate) const CONNECTION_STACK_BYTES: usize = 256 << 10;
/// Buffer of each connection's reader and of its writer.
pub(crate) const SOCKET_BUFFER_BYTES: usize = 128 << 10;

/// The shared budget of request bytes in memory ([`Limits::max_buffered_bytes`]).
pub(crate) struct ByteBudget {
    available: Mutex<u64>,
    returned: Condvar,
}

impl ByteBudget {
    pub(crate) fn new(total: u64) -> ByteBudget {
        ByteBudget { available: Mutex::new(total), returned: Condvar::new() }
    }

    /// Waits until `bytes` are free and takes them until the lease is dropped.
    pub(crate) fn lease(&self, bytes: u64) -> Lease<'_> {
        let mut available = self.available.lock().unwrap_or_else(PoisonError::into_inner);
        while *available < bytes {
            available = self.returned.wait(available).unwrap_or_else(PoisonError::into_inner);
        }
        *available -= bytes;
        Lease { budget: self, bytes }
    }
}

/// The export's request threads not yet started ([`Limits::max_request_threads`]).
pub(crate) struct WorkerSlots {
    free: AtomicUsize,
}

impl WorkerSlots {
    pub(crate) fn new(total: usize) -> WorkerSlots {
        WorkerSlots { free: AtomicUsize::new(total) }
    }

    /// Takes a slot if one is free; a started thread holds it until [`Self::give_back`].
    pub(crate) fn take(&self) -> bool {
        self.free.fetch_update(Ordering::AcqRel, Ordering::Acquire, |free| free.checked_sub(1)).is_ok()
    }

    pub(crate) fn give_back(&self) {
        self.free.fetch_add(1, Ordering::AcqRel);
    }
}

/// Bytes taken from a [`ByteBudget`], given back on drop.
pub(crate) struct Lease<'a> {
    budget: &'a ByteBudget,
    bytes: u64,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut available = self.budget.available.lock().unwrap_or_else(PoisonError::into_inner);
        *available += self.bytes;
        self.budget.returned.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_lease_waits_until_enough_bytes_are_returned() {
        let budget = Arc::new(ByteBudget::new(100));
        let first = budget.lease(70);
        let waiter = {
            let budget = Arc::clone(&budget);
            std::thread::spawn(move || {
                let _second = budget.lease(50);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "50 bytes were leased while only 30 were free");
        drop(first);
        waiter.join().expect("the waiting lease is granted once the first is dropped");
        assert_eq!(*budget.available.lock().expect("lock"), 100);
    }

    #[test]
    fn limits_below_one_request_are_refused() {
        let mut limits = Limits::default();
        assert!(limits.validate().is_ok());
        limits.max_buffered_bytes = u64::from(MAX_REQUEST_BYTES) - 1;
        assert!(limits.validate().is_err_and(|reason| reason.contains("one largest request")));
        limits = Limits { max_connections: 0, ..Limits::default() };
        assert!(limits.validate().is_err());
    }
}
