//! [`DeviceParams`]: the SSD parameters Telomere's admission control needs
//! (Table 1's P, S_pages, S_blocks, S_chips, t_r, t_w, t_e), with the two
//! devices of the paper's evaluation as presets.

use serde::{Deserialize, Serialize};
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

    /// A preset by the name the CLI accepts (`1tb`, `cosmos`).
    #[must_use]
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "1tb" | "telomere-1tb" => Some(Self::telomere_1tb()),
            "cosmos" => Some(Self::cosmos()),
            _ => None,
        }
    }

    /// S_chips.
    #[must_use]
    pub fn chips(&self) -> u64 {
        self.channels * self.chips_per_channel
    }

    /// S_blocks.
    #[must_use]
    pub fn blocks(&self) -> u64 {
        self.chips() * self.blocks_per_chip
    }

    /// S_pages.
    #[must_use]
    pub fn pages(&self) -> u64 {
        self.blocks() * self.pages_per_block
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

    #[allow(clippy::cast_precision_loss)]
    fn pages_per_second(&self, chip_bytes_per_second: u64) -> f64 {
        self.chips() as f64 * chip_bytes_per_second as f64 / self.page_size_bytes.max(1) as f64
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
}
