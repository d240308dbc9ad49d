//! Reading task and device TOML files: the text, then the typed raw form,
//! each failure naming the file.

use crate::AdmissionError;
use serde::de::DeserializeOwned;
use std::path::Path;

pub(crate) fn read(path: &Path) -> Result<String, AdmissionError> {
    std::fs::read_to_string(path).map_err(|cause| AdmissionError::Read { path: path.to_owned(), cause })
}

pub(crate) fn parse<T: DeserializeOwned>(text: &str, path: &Path) -> Result<T, AdmissionError> {
    toml::from_str(text).map_err(|cause| AdmissionError::Toml { path: path.to_owned(), cause: Box::new(cause) })
}
