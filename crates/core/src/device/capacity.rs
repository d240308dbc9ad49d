//! `device.capacity`: the logical capacity in bytes, written with units
//! (`"64GB"`, `"32GiB"`), from which the blocks per plane are derived. It is
//! resolved in the configuration table, before the `[device]` section is read,
//! into the `blocks_per_plane` and `logical_pages` it stands for, so every
//! later reader sees a plain geometry (docs/configuration.md, `[device]`).

use super::DeviceConfig;
use crate::error::ConfigError;

const KEY: &str = "device.capacity";

/// Replaces `device.capacity` in a configuration table by the
/// `blocks_per_plane` and `logical_pages` it derives: the logical capacity is
/// exactly the given bytes, in whole pages; the flash is the fewest whole
/// blocks per plane that give at least the over-provisioning asked for — the
/// section's `over_provisioning`, or else the ratio its own geometry
/// describes. Capacity wins over a `blocks_per_plane` or `logical_pages`
/// given beside it (a preset's, typically).
pub fn resolve(table: &mut toml::Table) -> Result<(), ConfigError> {
    let Some(toml::Value::Table(device)) = table.get_mut("device") else {
        return Ok(());
    };
    let Some(value) = device.remove("capacity") else {
        return Ok(());
    };
    let bytes = capacity_bytes(&value)?;
    let section = read_section(device)?;
    let page_size = u64::from(section.page_size);
    if page_size == 0 || !bytes.is_multiple_of(page_size) {
        let below = bytes - bytes % page_size.max(1);
        return Err(ConfigError::new(
            KEY,
            format!(
                "{bytes} bytes is not a whole number of {page_size}-byte pages (device.page_size); \
                 the nearest whole-page capacities are {below} and {} bytes",
                below.saturating_add(page_size)
            ),
        ));
    }
    let fitted = section.fitted_to(bytes)?;
    device.insert("blocks_per_plane".to_owned(), toml::Value::Integer(i64::from(fitted.blocks_per_plane)));
    let logical_pages = fitted.logical_pages.map_or(0, |pages| i64::try_from(pages).unwrap_or(i64::MAX));
    device.insert("logical_pages".to_owned(), toml::Value::Integer(logical_pages));
    device.remove("over_provisioning");
    Ok(())
}

/// The capacity in bytes: an integer, or a string with a unit.
fn capacity_bytes(value: &toml::Value) -> Result<u64, ConfigError> {
    let bytes = match value {
        toml::Value::Integer(bytes) => u64::try_from(*bytes).unwrap_or(0),
        toml::Value::String(text) => nandlab_quote::parse_byte_size(text).map_err(|reason| {
            let text = nandlab_quote::quote(text);
            ConfigError::new(KEY, format!("`{text}`: {reason}; write bytes with a unit, e.g. \"64GB\" or \"32GiB\""))
        })?,
        other => {
            return Err(ConfigError::new(KEY, format!("expected bytes (e.g. \"64GB\"), found {}", other.type_str())));
        }
    };
    if bytes == 0 {
        return Err(ConfigError::new(KEY, "must be at least one page"));
    }
    Ok(bytes)
}

/// The rest of the `[device]` section as a [`DeviceConfig`]; without
/// `blocks_per_plane` (which the capacity derives), `over_provisioning` must
/// say how much flash to add.
fn read_section(device: &toml::Table) -> Result<DeviceConfig, ConfigError> {
    let mut section = device.clone();
    if !section.contains_key("blocks_per_plane") {
        if !section.contains_key("over_provisioning") {
            return Err(ConfigError::new(
                KEY,
                "derives blocks_per_plane from device.over_provisioning, which is not set (nor blocks_per_plane, \
                 from which a ratio could be read)",
            ));
        }
        // Any valid count: the derivation replaces it and reads only the ratio.
        section.insert("blocks_per_plane".to_owned(), toml::Value::Integer(4));
    }
    serde_path_to_error::deserialize(toml::Value::Table(section))
        .map_err(|error| ConfigError::new(format!("device.{}", error.path()), error.into_inner().to_string()))
}
