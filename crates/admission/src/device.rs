//! [`DeviceParams`]: the SSD parameters Telomere's admission control needs
//! (Table 1's P, S_pages, S_blocks, S_chips, t_r, t_w, t_e), with the two
//! devices of the paper's evaluation as presets, and the device TOML format:
//!
//! ```toml
//! preset = "telomere-1tb"   # optional: start from a preset, override keys below
//! name = "example"          # optional, default: the file name without .toml
//! channels = 1              # 1 to 1,024
//! chips_per_channel = 1     # 1 to 1,024 (at most 65,536 chips in all)
//! blocks_per_chip = 64      # 1 to 16,777,216
//! pages_per_block = 8       # P, 1 to 65,536
//! page_size_bytes = 4096    # 1 to 1,048,576
//! read_us = 200             # t_r in µs, 0.001 to 1,000,000 (fractions allowed)
//! write_us = 700            # t_w
//! erase_us = 2700           # t_e
//! chip_read_bytes_per_second = 100000000   # optional, 1 to 10^12; default:
//! chip_write_bytes_per_second = 41400000   #   the preset's, else one page per t_r / t_w
//! ```
//!
//! Without `preset` every geometry and latency key is required; unknown keys
//! are refused.

use crate::limits::{integer, real, Number};
use crate::{toml_file, AdmissionError};
use nandlab_convert::f64_of;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// Geometry and flash latencies of one SSD, as seen by admission control.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceParams {
    pub name: String,
    pub channels: u64,
    pub chips_per_channel: u64,
    pub blocks_per_chip: u64,
    /// P in Table 1.
    pub pages_per_block: u64,
    pub page_size_bytes: u64,
    /// t_r, t_w, t_e in Table 1.
    pub read: Duration,
    pub write: Duration,
    pub erase: Duration,
    /// Sustained read and write bandwidth of one chip, bytes per second
    /// (Section 6.1.1 quotes 100 MB/s and 41.4 MB/s from [16]; with the
    /// 1.4 GB/s "block erasure bandwidth", 4 MB per 2.7 ms, these are per-chip
    /// figures). B^R_max and B^W_max of eq. (21)-(22) are S_chips times these.
    pub chip_read_bytes_per_second: u64,
    pub chip_write_bytes_per_second: u64,
}

impl DeviceParams {
    /// The 1 TB drive of Section 6.1.1: 16 channels × 4 chips, 4,096 blocks per
    /// chip, 128 pages of 32 KB per block; read 0.2 ms, write 0.7 ms, erase 2.7 ms.
    #[must_use]
    pub fn telomere_1tb() -> Self {
        Self {
            name: "1tb".to_owned(),
            channels: 16,
            chips_per_channel: 4,
            blocks_per_chip: 4096,
            pages_per_block: 128,
            page_size_bytes: 32 * 1024,
            read: Duration::from_micros(200),
            write: Duration::from_micros(700),
            erase: Duration::from_micros(2700),
            chip_read_bytes_per_second: 100_000_000,
            chip_write_bytes_per_second: 41_400_000,
        }
    }

    /// The OpenSSD Cosmos board of Section 6.3 as run for Table 3: 256 pages of
    /// 8 KB per block and 21 blocks per chip. The paper gives neither the chip
    /// count nor the latencies; like the `cosmos` preset of nandlab-core we use
    /// 4 channels × 8 ways and the 1 TB drive's latencies, and chip bandwidths
    /// of one page per read or program time.
    #[must_use]
    pub fn cosmos() -> Self {
        let page_size_bytes = 8 * 1024;
        let base = Self::telomere_1tb();
        Self {
            chip_read_bytes_per_second: bytes_per_second(page_size_bytes, base.read),
            chip_write_bytes_per_second: bytes_per_second(page_size_bytes, base.write),
            name: "cosmos".to_owned(),
            channels: 4,
            chips_per_channel: 8,
            blocks_per_chip: 21,
            pages_per_block: 256,
            page_size_bytes,
            ..base
        }
    }

    /// A preset by the name the CLI accepts (`telomere-1tb` or `1tb`, `cosmos`).
    #[must_use]
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "1tb" | "telomere-1tb" => Some(Self::telomere_1tb()),
            "cosmos" => Some(Self::cosmos()),
            _ => None,
        }
    }

    /// A preset by name, else a device TOML file (format in the module
    /// documentation) at that path.
    pub fn from_preset_or_file(spec: &str) -> Result<Self, AdmissionError> {
        if let Some(device) = Self::preset(spec) {
            return Ok(device);
        }
        let path = Path::new(spec);
        if !path.exists() {
            return Err(AdmissionError::UnknownDevice { spec: spec.to_owned() });
        }
        Self::load(path)
    }

    /// Reads a device TOML file.
    pub fn load(path: &Path) -> Result<Self, AdmissionError> {
        Self::parse(&toml_file::read(path)?, path)
    }

    /// Parses device TOML; `path` labels errors and gives the default name.
    pub fn parse(text: &str, path: &Path) -> Result<Self, AdmissionError> {
        let raw: RawDevice = toml_file::parse(text, path)?;
        let default_name = path.file_stem().map_or_else(|| "device".to_owned(), |stem| stem.to_string_lossy().into());
        raw.into_device(default_name).map_err(|(key, reason)| AdmissionError::InvalidDevice {
            path: path.to_owned(),
            key,
            reason,
        })
    }

    /// S_chips.
    #[must_use]
    pub fn chips(&self) -> u64 {
        self.channels.saturating_mul(self.chips_per_channel)
    }

    /// S_blocks.
    #[must_use]
    pub fn blocks(&self) -> u64 {
        self.chips().saturating_mul(self.blocks_per_chip)
    }

    /// S_pages.
    #[must_use]
    pub fn pages(&self) -> u64 {
        self.blocks().saturating_mul(self.pages_per_block)
    }

    /// B^R_max of eq. (21) in pages per second: every chip reading.
    #[must_use]
    pub fn read_pages_per_second(&self) -> f64 {
        self.pages_per_second(self.chip_read_bytes_per_second)
    }

    /// B^W_max of eq. (22) in pages per second: every chip programming.
    #[must_use]
    pub fn write_pages_per_second(&self) -> f64 {
        self.pages_per_second(self.chip_write_bytes_per_second)
    }

    fn pages_per_second(&self, chip_bytes_per_second: u64) -> f64 {
        f64_of(self.chips()) * f64_of(chip_bytes_per_second) / f64_of(self.page_size_bytes.max(1))
    }
}

/// Largest values a device file may give (far above any real SSD; they keep
/// S_pages below 2^56 and every product of sizes and times within u64).
pub const CHANNELS_MAX: u64 = 1024;
pub const CHIPS_PER_CHANNEL_MAX: u64 = 1024;
pub const CHIPS_MAX: u64 = 65_536;
pub const BLOCKS_PER_CHIP_MAX: u64 = 1 << 24;
pub const PAGES_PER_BLOCK_MAX: u64 = 65_536;
pub const PAGE_SIZE_BYTES_MAX: u64 = 1 << 20;
/// Flash latencies in µs: from 1 ns to 1 s.
pub const LATENCY_US_MIN: f64 = 0.001;
pub const LATENCY_US_MAX: f64 = 1e6;
pub const CHIP_BYTES_PER_SECOND_MAX: u64 = 1_000_000_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    preset: Option<String>,
    name: Option<String>,
    channels: Option<Number>,
    chips_per_channel: Option<Number>,
    blocks_per_chip: Option<Number>,
    pages_per_block: Option<Number>,
    page_size_bytes: Option<Number>,
    read_us: Option<Number>,
    write_us: Option<Number>,
    erase_us: Option<Number>,
    chip_read_bytes_per_second: Option<Number>,
    chip_write_bytes_per_second: Option<Number>,
}

type KeyError = (&'static str, String);

impl RawDevice {
    fn into_device(self, default_name: String) -> Result<DeviceParams, KeyError> {
        let base = match &self.preset {
            Some(name) => Some(DeviceParams::preset(name).ok_or_else(|| {
                let name = nandlab_quote::quote(name);
                ("preset", format!("unknown preset `{name}` (expected `telomere-1tb`, `1tb` or `cosmos`)"))
            })?),
            None => None,
        };
        let count = |key, value: Option<Number>, max, base_value: Option<u64>| match value {
            Some(value) => integer(value, 1, max).map_err(|reason| (key, reason)),
            None => base_value.ok_or_else(|| (key, "missing (required without `preset`)".to_owned())),
        };
        let latency = |key, value: Option<Number>, base_value: Option<Duration>| match value {
            Some(value) => real(value, LATENCY_US_MIN, LATENCY_US_MAX, "µs")
                .map(|micros| Duration::from_secs_f64(micros / 1e6))
                .map_err(|reason| (key, reason)),
            None => base_value.ok_or_else(|| (key, "missing (required without `preset`)".to_owned())),
        };
        let base = base.as_ref();
        let channels = count("channels", self.channels, CHANNELS_MAX, base.map(|device| device.channels))?;
        let chips_per_channel = count(
            "chips_per_channel",
            self.chips_per_channel,
            CHIPS_PER_CHANNEL_MAX,
            base.map(|device| device.chips_per_channel),
        )?;
        if channels * chips_per_channel > CHIPS_MAX {
            return Err((
                "chips_per_channel",
                format!("channels × chips_per_channel = {} exceeds {CHIPS_MAX} chips", channels * chips_per_channel),
            ));
        }
        let page_size_bytes = count(
            "page_size_bytes",
            self.page_size_bytes,
            PAGE_SIZE_BYTES_MAX,
            base.map(|device| device.page_size_bytes),
        )?;
        let read = latency("read_us", self.read_us, base.map(|device| device.read))?;
        let write = latency("write_us", self.write_us, base.map(|device| device.write))?;
        let bandwidth = |key, value: Option<Number>, base_value: Option<u64>, latency| match value {
            Some(value) => integer(value, 1, CHIP_BYTES_PER_SECOND_MAX).map_err(|reason| (key, reason)),
            None => Ok(base_value.unwrap_or_else(|| bytes_per_second(page_size_bytes, latency))),
        };
        Ok(DeviceParams {
            name: self.name.or_else(|| self.preset.clone()).unwrap_or(default_name),
            channels,
            chips_per_channel,
            blocks_per_chip: count(
                "blocks_per_chip",
                self.blocks_per_chip,
                BLOCKS_PER_CHIP_MAX,
                base.map(|device| device.blocks_per_chip),
            )?,
            pages_per_block: count(
                "pages_per_block",
                self.pages_per_block,
                PAGES_PER_BLOCK_MAX,
                base.map(|device| device.pages_per_block),
            )?,
            page_size_bytes,
            read,
            write,
            erase: latency("erase_us", self.erase_us, base.map(|device| device.erase))?,
            chip_read_bytes_per_second: bandwidth(
                "chip_read_bytes_per_second",
                self.chip_read_bytes_per_second,
                base.map(|device| device.chip_read_bytes_per_second),
                read,
            )?,
            chip_write_bytes_per_second: bandwidth(
                "chip_write_bytes_per_second",
                self.chip_write_bytes_per_second,
                base.map(|device| device.chip_write_bytes_per_second),
                write,
            )?,
        })
    }
}

/// One page per `latency`, in bytes per second.
fn bytes_per_second(page_size_bytes: u64, latency: Duration) -> u64 {
    u64::try_from(u128::from(page_size_bytes) * 1_000_000_000 / latency.as_nanos().max(1)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_terabyte_drive_has_the_paper_geometry() {
        let device = DeviceParams::telomere_1tb();
        assert_eq!(device.chips(), 64);
        assert_eq!(device.blocks(), 262_144);
        assert_eq!(device.pages() * device.page_size_bytes, 1 << 40);
    }

    const EXAMPLE: &str = "channels = 1\nchips_per_channel = 2\nblocks_per_chip = 64\npages_per_block = 8\n\
                           page_size_bytes = 4096\nread_us = 200\nwrite_us = 700\nerase_us = 2700\n";

    #[test]
    fn a_device_file_gives_every_parameter() {
        let device = DeviceParams::parse(EXAMPLE, Path::new("dir/p8.toml")).expect("valid device");
        assert_eq!(device.name, "p8");
        assert_eq!((device.chips(), device.blocks(), device.pages()), (2, 128, 1024));
        assert_eq!(
            (device.read, device.write, device.erase),
            (Duration::from_micros(200), Duration::from_micros(700), Duration::from_micros(2700))
        );
        assert_eq!(device.chip_write_bytes_per_second, 4096 * 1_000_000 / 700);
        let based = DeviceParams::parse("preset = \"1tb\"\npages_per_block = 8\n", Path::new("x.toml")).expect("valid");
        assert_eq!(based, DeviceParams { name: "1tb".to_owned(), pages_per_block: 8, ..DeviceParams::telomere_1tb() });
    }

    #[test]
    fn device_file_errors_name_the_key() {
        let error = |text: &str| DeviceParams::parse(text, Path::new("d.toml")).expect_err("invalid").to_string();
        let zero = error(&EXAMPLE.replace("pages_per_block = 8", "pages_per_block = 0"));
        assert!(zero.starts_with("d.toml: key `pages_per_block`: must be a whole number from 1 to 65536"), "{zero}");
        let huge = error(&EXAMPLE.replace("erase_us = 2700", "erase_us = 1e300"));
        assert!(huge.contains("`erase_us`") && huge.contains("1e300"), "{huge}");
        assert!(error(&EXAMPLE.replace("read_us = 200", "read_us = nan")).contains("`read_us`"));
        assert!(error(&EXAMPLE.replace("channels = 1\n", "")).contains("`channels`: missing"));
        let wide = EXAMPLE.replace("channels = 1\n", "channels = 1024\n").replace("_channel = 2", "_channel = 1024");
        assert!(error(&wide).contains("exceeds 65536 chips"), "{}", error(&wide));
        let unknown = error(&format!("{EXAMPLE}erase_ms = 3\n"));
        assert!(unknown.contains("erase_ms"), "{unknown}");
        assert!(error("preset = \"2tb\"\n").contains("`preset`"));
        let missing = DeviceParams::from_preset_or_file("no-such-device").expect_err("unknown").to_string();
        assert!(missing.contains("no-such-device") && missing.contains("cosmos"), "{missing}");
    }
}
