//! `nandlab._native.Dhrd`: the DHRD device (crate nandlab-dhrd) for Python. Thin methods that
//! release the GIL around each device call; `read_at` copies straight from the RAM image into the
//! new `bytes` object (the direct byte read, paper 001 section 3.4). Errors map to Python here:
//! backing-store failures to `OSError` (with errno), bad arguments and ranges to `ValueError`, a
//! RAM/backing mismatch found by `verify_mirror` to `RuntimeError`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nandlab_dhrd::{parse_byte_size, ChunkState, Device, DeviceConfig, DhrdError, Durability};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMemoryView, PySlice, PyString};

/// `wait_initialized` re-acquires the GIL this often to let Ctrl-C through.
const WAIT_SLICE: Duration = Duration::from_millis(100);

fn to_py(err: DhrdError) -> PyErr {
    match &err {
        DhrdError::Backing { source, .. } => match source.raw_os_error() {
            // OSError(errno, text) becomes FileNotFoundError, PermissionError, ... as Python does.
            Some(errno) => PyOSError::new_err((errno, err.to_string())),
            None => PyOSError::new_err(err.to_string()),
        },
        DhrdError::BackingInUse { .. } => PyOSError::new_err(err.to_string()),
        DhrdError::MirrorMismatch { .. } => PyRuntimeError::new_err(err.to_string()),
        _ => PyValueError::new_err(err.to_string()),
    }
}

fn closed_error() -> PyErr {
    PyValueError::new_err("I/O operation on a closed Dhrd")
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A byte count given as an int or as text such as "4MiB" (the CLI's `--size` syntax).
fn byte_size(value: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if let Ok(text) = value.cast::<PyString>() {
        return parse_byte_size(&text.to_cow()?).map_err(to_py);
    }
    value
        .extract::<u64>()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a non-negative int or a size such as \"4MiB\"")))
}

/// The same check the device makes, done before allocating the result of a read.
fn check_range(device: &Device, offset: u64, length: u64) -> PyResult<()> {
    let end = u128::from(offset) + u128::from(length);
    let size_bytes = device.size_bytes();
    if end > u128::from(size_bytes) {
        return Err(to_py(DhrdError::OutOfRange { offset, end, size_bytes }));
    }
    Ok(())
}

fn chunk_state_name(state: ChunkState) -> &'static str {
    match state {
        ChunkState::Uninitialized => "uninitialized",
        ChunkState::Initializing => "initializing",
        ChunkState::Initialized => "initialized",
    }
}

/// A durable hybrid RAM disk: reads are served from RAM, writes are acknowledged once durable on the
/// backing file. `Dhrd(backing, size)` opens the backing file (creating it sparse when missing, then
/// `size` is required) and starts the background copy of the backing file into RAM at once; requests
/// are served from the first moment. Use it as a context manager or call `close()`: only one process
/// may have a backing file open as a DHRD.
#[pyclass(name = "Dhrd", module = "nandlab._native", frozen)]
pub struct PyDhrd {
    /// `None` once closed. Each call clones the `Arc` and releases the lock before the device call.
    device: Mutex<Option<Arc<Device>>>,
    backing: PathBuf,
    durability: Durability,
}

impl PyDhrd {
    fn device(&self) -> PyResult<Arc<Device>> {
        lock(&self.device).clone().ok_or_else(closed_error)
    }
}

#[pymethods]
impl PyDhrd {
    /// Opens `backing` as a DHRD (see the class docstring). `size` (int or text such as "4MiB") is
    /// required when the file does not exist and must match it when it does; `chunk_bytes` is the
    /// unit of initialization and locking (power of two, 4 KiB..1 GiB, default 1 MiB); `durability` is "direct",
    /// "dsync" or "write-back"; `copy_rate_bytes_per_s` throttles the background copier.
    #[new]
    #[pyo3(signature = (backing, size=None, *, chunk_bytes=None, durability="direct", copy_rate_bytes_per_s=None))]
    fn new(
        py: Python<'_>,
        backing: PathBuf,
        size: Option<&Bound<'_, PyAny>>,
        chunk_bytes: Option<&Bound<'_, PyAny>>,
        durability: &str,
        copy_rate_bytes_per_s: Option<u64>,
    ) -> PyResult<Self> {
        let size = size.map(|size| byte_size(size, "size")).transpose()?;
        let mut config = DeviceConfig::new(backing.clone(), size);
        if let Some(chunk_bytes) = chunk_bytes {
            config.chunk_bytes = byte_size(chunk_bytes, "chunk_bytes")?;
        }
        config.durability = durability.parse::<Durability>().map_err(to_py)?;
        config.copy_rate_bytes_per_s = copy_rate_bytes_per_s;
        let device = py.detach(|| Device::open(&config)).map_err(to_py)?;
        Ok(PyDhrd { device: Mutex::new(Some(Arc::new(device))), backing, durability: config.durability })
    }

    /// Device size in bytes.
    #[getter]
    fn size_bytes(&self) -> PyResult<u64> {
        Ok(self.device()?.size_bytes())
    }

    /// Chunk size in bytes (the unit of fast initialization).
    #[getter]
    fn chunk_bytes(&self) -> PyResult<u64> {
        Ok(self.device()?.chunk_bytes())
    }

    /// Path of the backing file.
    #[getter]
    fn backing(&self) -> PathBuf {
        self.backing.clone()
    }

    /// Durability mode: "direct", "dsync" or "write-back".
    #[getter]
    fn durability(&self) -> String {
        self.durability.to_string()
    }

    /// True once `close()` has been called.
    #[getter]
    fn closed(&self) -> bool {
        lock(&self.device).is_none()
    }

    /// True once every chunk has been copied into RAM (reads no longer touch the backing file).
    #[getter]
    fn initialized(&self) -> PyResult<bool> {
        Ok(self.device()?.init_progress().is_complete())
    }

    /// Returns `length` bytes at `offset` as `bytes`; any offset and length (no alignment), copied
    /// once from the RAM image (or read from the backing file for chunks not yet in RAM). Raises
    /// ValueError when the range reaches past the end of the device.
    fn read_at<'py>(&self, py: Python<'py>, offset: u64, length: usize) -> PyResult<Bound<'py, PyBytes>> {
        let device = self.device()?;
        check_range(&device, offset, length as u64)?;
        PyBytes::new_with(py, length, |buf| py.detach(|| device.read_at(offset, buf)).map_err(to_py))
    }

    /// Fills the writable buffer `buffer` (bytearray, memoryview, array, mmap, ...) with the bytes
    /// at `offset` and returns how many were read (the buffer's size in bytes). Any alignment.
    /// Costs one more copy than `read_at` (safe code only: no raw buffer access in the abi3 build).
    fn read_into(&self, py: Python<'_>, offset: u64, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        let view = PyMemoryView::from(buffer)?;
        if view.getattr("readonly")?.extract::<bool>()? {
            let message = "read_into needs a writable buffer (e.g. a bytearray), not a read-only one";
            return Err(PyTypeError::new_err(message));
        }
        let view = view.call_method1("cast", ("B",))?;
        let length: usize = view.getattr("nbytes")?.extract()?;
        let data = self.read_at(py, offset, length)?;
        view.set_item(PySlice::full(py), data)?;
        Ok(length)
    }

    /// Writes `data` (any bytes-like object) at `offset`, any alignment. Returns once the data is
    /// durable on the backing file (in "write-back" mode: once it is in the page cache; `flush()`
    /// makes it durable). Raises ValueError when the range reaches past the end of the device.
    fn write_at(&self, py: Python<'_>, offset: u64, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let device = self.device()?;
        let copied;
        let bytes = match data.cast::<PyBytes>() {
            Ok(bytes) => bytes,
            Err(_) => {
                copied = PyMemoryView::from(data)?.call_method0("tobytes")?.cast_into::<PyBytes>()?;
                &copied
            }
        };
        let data = bytes.as_bytes();
        py.detach(|| device.write_at(offset, data)).map_err(to_py)
    }

    /// Discards `length` bytes at `offset`: the range reads as zeros afterwards and the backing
    /// file gets a hole.
    fn discard(&self, py: Python<'_>, offset: u64, length: u64) -> PyResult<()> {
        let device = self.device()?;
        py.detach(|| device.discard(offset, length)).map_err(to_py)
    }

    /// fdatasync of the backing file: every acknowledged write is durable afterwards, in every
    /// durability mode.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let device = self.device()?;
        py.detach(|| device.flush()).map_err(to_py)
    }

    /// Same as `flush()`.
    fn fsync(&self, py: Python<'_>) -> PyResult<()> {
        self.flush(py)
    }

    /// Fast-initialization progress as a dict: `chunks_initialized`, `chunks_total`, `complete`,
    /// `permille`, `finished_after_s` (None while copying) and `copier_error` (None unless the
    /// copier stopped early; the rest is then served from the backing file).
    fn init_progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let progress = self.device()?.init_progress();
        let dict = PyDict::new(py);
        dict.set_item("chunks_initialized", progress.chunks_initialized)?;
        dict.set_item("chunks_total", progress.chunks_total)?;
        dict.set_item("complete", progress.is_complete())?;
        dict.set_item("permille", progress.permille())?;
        dict.set_item("finished_after_s", progress.finished_after.map(|elapsed| elapsed.as_secs_f64()))?;
        dict.set_item("copier_error", progress.copier_error)?;
        Ok(dict)
    }

    /// Waits until initialization completes, the copier fails, or `timeout_s` seconds pass (None:
    /// no limit; Ctrl-C interrupts the wait). Returns whether initialization is complete.
    #[pyo3(signature = (timeout_s=None))]
    fn wait_initialized(&self, py: Python<'_>, timeout_s: Option<f64>) -> PyResult<bool> {
        let device = self.device()?;
        // Negative or NaN waits nothing; infinity or huge values wait without limit.
        let limit = timeout_s.map(|seconds| Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::MAX));
        let started = Instant::now();
        loop {
            let remaining = limit.map(|limit| limit.saturating_sub(started.elapsed()));
            let slice = remaining.map_or(WAIT_SLICE, |remaining| remaining.min(WAIT_SLICE));
            if py.detach(|| device.wait_initialized(slice)) {
                return Ok(true);
            }
            if device.init_progress().copier_error.is_some() || remaining.is_some_and(|remaining| remaining <= slice) {
                return Ok(false);
            }
            py.check_signals()?;
        }
    }

    /// Initialization state of chunk `index`: "uninitialized", "initializing" or "initialized";
    /// None past the last chunk.
    fn chunk_state(&self, index: u64) -> PyResult<Option<&'static str>> {
        Ok(self.device()?.chunk_state(index).map(chunk_state_name))
    }

    /// Compares every initialized chunk of the RAM image with the backing file, byte for byte, and
    /// returns how many chunks were compared; raises RuntimeError at the first difference.
    fn verify_mirror(&self, py: Python<'_>) -> PyResult<u64> {
        let device = self.device()?;
        py.detach(|| device.verify_mirror()).map_err(to_py)
    }

    /// Statistics as a dict with the keys of the FUSE front end's `stats` file (counters, bytes,
    /// `init_*` progress, `read_latency_*`/`write_latency_*` percentiles in ns).
    /// `init_finished_after_ms` and `init_copier_error` are None while not applicable.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.device()?.stats();
        let init = &stats.init;
        let dict = PyDict::new(py);
        dict.set_item("size_bytes", stats.size_bytes)?;
        dict.set_item("chunk_bytes", stats.chunk_bytes)?;
        dict.set_item("durability", &stats.durability)?;
        dict.set_item("direct_io", stats.direct_io)?;
        for (key, value) in [
            ("reads", stats.reads),
            ("writes", stats.writes),
            ("discards", stats.discards),
            ("flushes", stats.flushes),
            ("read_bytes", stats.read_bytes),
            ("written_bytes", stats.written_bytes),
            ("discarded_bytes", stats.discarded_bytes),
            ("init_chunks_initialized", init.chunks_initialized),
            ("init_chunks_total", init.chunks_total),
            ("init_permille", init.permille()),
            ("init_reads_from_backing", stats.reads_from_backing),
            ("init_writes_waited_for_copy", stats.writes_waited_for_copy),
            ("init_writes_backing_only", stats.writes_backing_only),
            ("init_copier_waits", stats.copier_waits),
        ] {
            dict.set_item(key, value)?;
        }
        let finished_ms = init.finished_after.map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
        dict.set_item("init_finished_after_ms", finished_ms)?;
        dict.set_item("init_copier_error", init.copier_error.as_deref())?;
        for (name, latency) in [("read", &stats.read_latency), ("write", &stats.write_latency)] {
            dict.set_item(format!("{name}_latency_count"), latency.count)?;
            dict.set_item(format!("{name}_latency_p50_ns"), latency.p50_ns)?;
            dict.set_item(format!("{name}_latency_p90_ns"), latency.p90_ns)?;
            dict.set_item(format!("{name}_latency_p99_ns"), latency.p99_ns)?;
            dict.set_item(format!("{name}_latency_p999_ns"), latency.p999_ns)?;
            dict.set_item(format!("{name}_latency_max_ns"), latency.max_ns)?;
        }
        Ok(dict)
    }

    /// Stops the background copier, makes every acknowledged write durable and releases the backing
    /// file (so it can be opened again). Calling it again does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(device) = lock(&self.device).take() else {
            return Ok(());
        };
        py.detach(|| match Arc::try_unwrap(device) {
            Ok(device) => device.close(),
            // Another thread is still inside a call; the device is dropped when that call returns.
            Err(device) => device.flush(),
        })
        .map_err(to_py)
    }

    /// Returns the device itself; raises ValueError when it is closed.
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().device()?;
        Ok(slf)
    }

    /// Closes the device; exceptions propagate.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc_value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let backing = self.backing.display();
        match lock(&self.device).as_ref() {
            Some(device) => {
                format!("Dhrd('{backing}', size_bytes={}, durability='{}')", device.size_bytes(), self.durability)
            }
            None => format!("Dhrd('{backing}', closed)"),
        }
    }
}
