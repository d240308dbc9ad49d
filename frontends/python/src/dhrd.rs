//! `nandlab._native.Dhrd`: the DHRD device (crate nandlab-dhrd) for Python. One-line methods that
//! release the GIL around each device call; `read_at` copies straight from the RAM image into the
//! new `bytes` object (the direct byte read, paper 001 section 3.4). Errors map to Python here:
//! backing-store failures to `OSError` (with errno), bad arguments and ranges to `ValueError`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nandlab_dhrd::{Device, DeviceConfig, DhrdError, Durability};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

fn to_py(err: DhrdError) -> PyErr {
    match &err {
        DhrdError::Backing { source, .. } => {
            PyOSError::new_err((source.raw_os_error().unwrap_or(0), err.to_string()))
        }
        DhrdError::BackingInUse { .. } => PyOSError::new_err(err.to_string()),
        _ => PyValueError::new_err(err.to_string()),
    }
}

/// A durable hybrid RAM disk: reads from RAM, writes acknowledged once durable on the backing file.
#[pyclass(name = "Dhrd", module = "nandlab._native", frozen)]
pub struct PyDhrd {
    device: Arc<Device>,
}

#[pymethods]
impl PyDhrd {
    /// Opens (creating if missing, then `size` is required) and starts fast initialization.
    #[staticmethod]
    #[pyo3(signature = (backing, size=None, chunk_bytes=1<<20, durability="direct", copy_rate_bytes_per_s=None))]
    fn open(
        py: Python<'_>,
        backing: PathBuf,
        size: Option<u64>,
        chunk_bytes: u64,
        durability: &str,
        copy_rate_bytes_per_s: Option<u64>,
    ) -> PyResult<Self> {
        let mut config = DeviceConfig::new(backing, size);
        config.chunk_bytes = chunk_bytes;
        config.durability = durability.parse::<Durability>().map_err(to_py)?;
        config.copy_rate_bytes_per_s = copy_rate_bytes_per_s;
        let device = py.detach(|| Device::open(&config)).map_err(to_py)?;
        Ok(PyDhrd { device: Arc::new(device) })
    }

    #[getter]
    fn size_bytes(&self) -> u64 {
        self.device.size_bytes()
    }

    /// `length` bytes at `offset`, any alignment, copied once from the RAM image.
    fn read_at<'py>(&self, py: Python<'py>, offset: u64, length: usize) -> PyResult<Bound<'py, PyBytes>> {
        let device = &self.device;
        PyBytes::new_with(py, length, |buf| py.detach(|| device.read_at(offset, buf)).map_err(to_py))
    }

    /// Writes `data` at `offset`; returns once durable (per the durability mode).
    fn write_at(&self, py: Python<'_>, offset: u64, data: &[u8]) -> PyResult<()> {
        py.detach(|| self.device.write_at(offset, data)).map_err(to_py)
    }

    /// The range reads as zeros afterwards; the backing file gets a hole.
    fn discard(&self, py: Python<'_>, offset: u64, length: u64) -> PyResult<()> {
        py.detach(|| self.device.discard(offset, length)).map_err(to_py)
    }

    /// fdatasync: every acknowledged write is durable afterwards, in every durability mode.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.device.flush()).map_err(to_py)
    }

    /// Waits up to `timeout_s` seconds for initialization; returns whether it completed.
    fn wait_initialized(&self, py: Python<'_>, timeout_s: f64) -> bool {
        let timeout = Duration::from_secs_f64(timeout_s.max(0.0));
        py.detach(|| self.device.wait_initialized(timeout))
    }

    /// Statistics as a dict (the keys of DIR/stats): integers where the value is a number.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for line in self.device.stats().to_string().lines() {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match value.parse::<u64>() {
                Ok(number) => dict.set_item(key, number)?,
                Err(_) => dict.set_item(key, value)?,
            }
        }
        Ok(dict)
    }
}
