//! Sizes with units: every size-like key takes its native number (bytes or
//! pages, as its name says) or a string with a unit (`"4KiB"`, `"1MB"`), read
//! by [`nandlab_quote::parse_byte_size`]. The strings are resolved in the
//! configuration table, before it is read, into the native numbers, so the
//! resolved configuration (and a run's JSON) is the same either way. A size
//! given to a key counted in pages must be a whole number of pages
//! (`device.page_size`); the error names the key and the nearest whole-page
//! sizes. `request_size` (in `[workload]` and every `[[job]]`) is the request
//! size in bytes, resolved into `request_pages` (docs/configuration.md,
//! "Sizes with units").

use super::ConfigError;

/// The unit a key counts in natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Native {
    Bytes,
    /// Bytes per second: a size with an optional `/s` after its unit.
    BytesPerSecond,
    Pages,
}

/// Size-like keys of the sections (section, key, native unit). `device.capacity`
/// has its own resolver (crate::device::capacity), which runs after this one.
const SECTION_KEYS: &[(&str, &str, Native)] = &[
    ("device", "logical_pages", Native::Pages),
    ("workload", "bytes", Native::Bytes),
    ("workload", "request_pages", Native::Pages),
    ("metrics", "window_pages", Native::Pages),
    ("timing", "channel_bytes_per_s", Native::BytesPerSecond),
    ("timing", "write_buffer_pages", Native::Pages),
    ("timing", "stripe_pages", Native::Pages),
    ("pblk", "ws_min_pages", Native::Pages),
    ("pblk", "ws_opt_pages", Native::Pages),
    ("pblk", "write_buffer_pages", Native::Pages),
];

/// Size-like keys of every `[[job]]` table (the `[workload]` keys it takes).
const JOB_KEYS: &[(&str, Native)] = &[("bytes", Native::Bytes), ("request_pages", Native::Pages)];

/// The request size in bytes, written in place of `request_pages`.
const REQUEST_SIZE: &str = "request_size";

/// Replaces every size given with a unit by its native number, and
/// `request_size` by `request_pages`. `device.page_size` is read first: the
/// page-counted keys convert with it.
pub fn resolve(table: &mut toml::Table) -> Result<(), ConfigError> {
    let page_size = resolve_page_size(table)?;
    for &(section, key, native) in SECTION_KEYS {
        if let Some(toml::Value::Table(section_table)) = table.get_mut(section) {
            resolve_key(section_table, key, &format!("{section}.{key}"), native, page_size)?;
        }
    }
    if let Some(toml::Value::Table(workload)) = table.get_mut("workload") {
        resolve_request_size(workload, "workload", page_size)?;
    }
    if let Some(toml::Value::Array(jobs)) = table.get_mut("job") {
        for job in jobs.iter_mut().filter_map(toml::Value::as_table_mut) {
            let prefix = format!("job.{}", job.get("name").and_then(toml::Value::as_str).unwrap_or("?"));
            for &(key, native) in JOB_KEYS {
                resolve_key(job, key, &format!("{prefix}.{key}"), native, page_size)?;
            }
            resolve_request_size(job, &prefix, page_size)?;
        }
    }
    Ok(())
}

/// `device.page_size` as bytes (resolving a string with a unit in place);
/// `None` when the table has none (the page-counted keys then refuse units).
fn resolve_page_size(table: &mut toml::Table) -> Result<Option<u64>, ConfigError> {
    let Some(toml::Value::Table(device)) = table.get_mut("device") else {
        return Ok(None);
    };
    resolve_key(device, "page_size", "device.page_size", Native::Bytes, None)?;
    Ok(device.get("page_size").and_then(toml::Value::as_integer).and_then(|bytes| u64::try_from(bytes).ok()))
}

/// `request_size` (bytes) as `request_pages`, replacing any `request_pages`
/// beside it (a request size is the more specific way to say it).
fn resolve_request_size(table: &mut toml::Table, prefix: &str, page_size: Option<u64>) -> Result<(), ConfigError> {
    let Some(value) = table.remove(REQUEST_SIZE) else {
        return Ok(());
    };
    let key = format!("{prefix}.{REQUEST_SIZE}");
    let bytes = match &value {
        toml::Value::Integer(bytes) => u64::try_from(*bytes)
            .map_err(|_| ConfigError::new(key.clone(), format!("{bytes} bytes: a size is not negative")))?,
        toml::Value::String(text) => parse(text, &key, Native::Bytes)?,
        other => {
            return Err(ConfigError::new(key, format!("expected bytes (e.g. \"4KiB\"), found {}", other.type_str())))
        }
    };
    let pages = whole_pages(bytes, &key, page_size)?;
    table.insert("request_pages".to_owned(), to_integer(pages, &key)?);
    Ok(())
}

/// Replaces `table[key]`, when it is a string, by the native number it stands for.
fn resolve_key(
    table: &mut toml::Table,
    key: &str,
    full_key: &str,
    native: Native,
    page_size: Option<u64>,
) -> Result<(), ConfigError> {
    let Some(toml::Value::String(text)) = table.get(key) else {
        return Ok(());
    };
    let bytes = parse(text, full_key, native)?;
    let number = match native {
        Native::Bytes | Native::BytesPerSecond => bytes,
        Native::Pages => whole_pages(bytes, full_key, page_size)?,
    };
    table.insert(key.to_owned(), to_integer(number, full_key)?);
    Ok(())
}

/// Bytes of a size written as a string. A key counted in pages needs a unit
/// (a bare number in quotes would be ambiguous: pages or bytes?).
fn parse(text: &str, key: &str, native: Native) -> Result<u64, ConfigError> {
    let shown = nandlab_quote::quote(text);
    let trimmed = text.trim();
    let size = match native {
        Native::BytesPerSecond => trimmed.strip_suffix("/s").unwrap_or(trimmed),
        Native::Bytes | Native::Pages => trimmed,
    };
    if native == Native::Pages && !size.is_empty() && size.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(ConfigError::new(
            key,
            format!("`{shown}` has no unit: write a number of pages without quotes, or a size with a unit (\"16KiB\")"),
        ));
    }
    nandlab_quote::parse_byte_size(size).map_err(|reason| {
        ConfigError::new(
            key,
            format!(
                "`{shown}`: {reason}; write a size with a unit: B, KiB, MiB, GiB, TiB (or K, M, G, T; powers of \
                 1024), KB, MB, GB, TB (powers of 1000)"
            ),
        )
    })
}

/// `bytes` in pages of `page_size` bytes; refused unless whole, naming the
/// nearest whole-page sizes.
fn whole_pages(bytes: u64, key: &str, page_size: Option<u64>) -> Result<u64, ConfigError> {
    let Some(page) = page_size.filter(|&page| page > 0) else {
        return Err(ConfigError::new(key, "a size with a unit needs device.page_size (an integer) to count its pages"));
    };
    if bytes.is_multiple_of(page) {
        return Ok(bytes / page);
    }
    let below = bytes - bytes % page;
    let above = below.saturating_add(page);
    let nearest = if below == 0 {
        format!("the nearest whole-page size is {}", shown_bytes(above))
    } else {
        format!("the nearest whole-page sizes are {} and {}", shown_bytes(below), shown_bytes(above))
    };
    Err(ConfigError::new(
        key,
        format!("{bytes} bytes is not a whole number of {page}-byte pages (device.page_size); {nearest}"),
    ))
}

/// `bytes` with the largest binary unit that divides it: `8192 bytes ("8KiB")`.
fn shown_bytes(bytes: u64) -> String {
    let unit = ["TiB", "GiB", "MiB", "KiB"]
        .into_iter()
        .zip([40, 30, 20, 10])
        .find(|&(_, shift)| bytes >= 1 << shift && bytes.is_multiple_of(1 << shift));
    match unit {
        Some((name, shift)) => format!("{bytes} bytes (\"{}{name}\")", bytes >> shift),
        None => format!("{bytes} bytes"),
    }
}

fn to_integer(number: u64, key: &str) -> Result<toml::Value, ConfigError> {
    i64::try_from(number)
        .map(toml::Value::Integer)
        .map_err(|_| ConfigError::new(key, format!("{number} is beyond any bound of this key")))
}
