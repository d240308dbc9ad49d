//! Flash geometry: how many channels, chips, dies, planes, blocks and pages a
//! device has, and how addresses map onto them. Built once from configuration,
//! validated, then passed by reference; it never changes during a run.

use crate::error::ConfigError;
use crate::units::{BlockId, Ppn, UnitId};
use nandlab_convert::{f64_of, saturating};
use serde::{Deserialize, Serialize};

/// Largest number of physical pages a device may have: page numbers are `u32`
/// and `u32::MAX` is reserved as the "no page" marker in the maps.
pub const PHYSICAL_PAGES_MAX: u64 = u32::MAX as u64 - 1;

/// Upper bounds of the `[device]` keys (docs/configuration.md, "Limits"):
/// beyond any real SSD, and small enough that no product of them overflows.
pub const DEVICE_KEY_MAX: [(&str, u32); 8] = [
    ("device.channels", 1024),
    ("device.chips_per_channel", 1024),
    ("device.dies_per_chip", 64),
    ("device.planes_per_die", 64),
    ("device.blocks_per_plane", 1 << 24),
    ("device.pages_per_block", 1 << 16),
    ("device.page_size", 1 << 20),
    ("device.pe_cycles", 10_000_000),
];

/// Geometry and capacity as written in a configuration file (`[device]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    pub channels: u32,
    pub chips_per_channel: u32,
    #[serde(default = "one")]
    pub dies_per_chip: u32,
    #[serde(default = "one")]
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Bytes per flash page.
    pub page_size: u32,
    /// ρ = physical pages / logical pages − 1. Ignored when `logical_pages` is given.
    #[serde(default)]
    pub over_provisioning: Option<f64>,
    /// Logical capacity in pages, when it is fixed rather than derived from ρ.
    #[serde(default)]
    pub logical_pages: Option<u64>,
    /// Rated program/erase cycles per block.
    #[serde(default = "default_pe_cycles")]
    pub pe_cycles: u32,
}

impl DeviceConfig {
    /// The same device with as many blocks per plane as it takes for the
    /// logical capacity to hold `logical_bytes`, at the same over-provisioning.
    /// Trace replays use it to scale a preset to the traced device (the
    /// Delay-D experiments scale `femu-32g` to the capture size).
    pub fn fitted_to(&self, logical_bytes: u64) -> Result<Self, ConfigError> {
        let rho = match self.over_provisioning {
            Some(rho) => rho,
            None => Geometry::from_config(self)?.over_provisioning(),
        };
        let page_size = std::num::NonZeroU64::new(u64::from(self.page_size))
            .ok_or_else(|| ConfigError::new("device.page_size", "must be at least 1"))?;
        let logical_pages = logical_bytes.div_ceil(page_size.get());
        let units = self.checked_units()?;
        let physical_pages = saturating::<u64>((f64_of(logical_pages) * (1.0 + rho)).ceil());
        let blocks = physical_pages.div_ceil(units.saturating_mul(u64::from(self.pages_per_block))).max(4);
        let blocks_per_plane = u32::try_from(blocks).map_err(|_| {
            ConfigError::new("device.blocks_per_plane", format!("{logical_bytes} bytes need too many blocks"))
        })?;
        let fitted =
            Self { blocks_per_plane, over_provisioning: None, logical_pages: Some(logical_pages), ..self.clone() };
        Geometry::from_config(&fitted)?;
        Ok(fitted)
    }

    /// Parallel units: channels × chips × dies × planes (saturating; a
    /// validated configuration is far below `u64::MAX`).
    #[must_use]
    pub fn units(&self) -> u64 {
        [self.channels, self.chips_per_channel, self.dies_per_chip, self.planes_per_die]
            .into_iter()
            .map(u64::from)
            .fold(1, u64::saturating_mul)
    }

    /// The same device with ever fewer parallel units, each one fewer at the
    /// innermost level that still has more than one (planes, then dies, then
    /// chips per channel, then channels), down to a single unit; the block
    /// and page sizes, over-provisioning and timing stay. A device scaled
    /// down to a small trace spreads its few blocks over fewer units, so
    /// each keeps enough spare blocks for its GC reserve ([`Self::fitted_to`]
    /// on each). A fixed `logical_pages` is carried as the ratio it gives,
    /// which a fixed page count on fewer units would not keep.
    pub fn with_fewer_units(&self) -> impl Iterator<Item = Self> {
        let mut device = self.with_ratio_kept();
        std::iter::from_fn(move || {
            let level = [
                &mut device.planes_per_die,
                &mut device.dies_per_chip,
                &mut device.chips_per_channel,
                &mut device.channels,
            ]
            .into_iter()
            .find(|count| **count > 1)?;
            *level -= 1;
            Some(device.clone())
        })
    }

    /// The same device with its over-provisioning as the ratio ρ rather than
    /// a fixed `logical_pages`, so that it stays when the geometry changes.
    fn with_ratio_kept(&self) -> Self {
        match (self.logical_pages, Geometry::from_config(self)) {
            (Some(_), Ok(geometry)) => {
                Self { over_provisioning: Some(geometry.over_provisioning()), logical_pages: None, ..self.clone() }
            }
            _ => self.clone(),
        }
    }

    /// The same device with `blocks_per_plane` blocks per plane and the
    /// logical capacity its over-provisioning ρ gives (⌊physical / (1 + ρ)⌋):
    /// a device grown beyond a trace too small for even one unit's reserve.
    #[must_use]
    pub fn with_blocks_per_plane(&self, blocks_per_plane: u32, rho: f64) -> Self {
        Self { blocks_per_plane, over_provisioning: Some(rho), logical_pages: None, ..self.clone() }
    }

    /// Parallel units (planes): channels × chips × dies × planes, checked.
    fn checked_units(&self) -> Result<u64, ConfigError> {
        let units = GeometryProduct::new(&self.factors()[..4]);
        units.at_most(u64::MAX, "parallel units")
    }

    /// Physical pages: the product of all six geometry keys, checked and at
    /// most [`PHYSICAL_PAGES_MAX`]. Each key has its own bound, but six keys
    /// within theirs can multiply to 2^72; the error then names the product.
    fn physical_pages(&self) -> Result<u64, ConfigError> {
        GeometryProduct::new(&self.factors()).at_most(PHYSICAL_PAGES_MAX, "physical pages")
    }

    /// The geometry keys in the order they multiply.
    fn factors(&self) -> [(&'static str, u32); 6] {
        [
            ("channels", self.channels),
            ("chips_per_channel", self.chips_per_channel),
            ("dies_per_chip", self.dies_per_chip),
            ("planes_per_die", self.planes_per_die),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
        ]
    }
}

/// A product of `[device]` keys computed without wrapping, with the formula
/// that names it in errors.
struct GeometryProduct {
    /// `None`: beyond even `u128` (the keys' own bounds not yet checked).
    value: Option<u128>,
    formula: String,
}

impl GeometryProduct {
    fn new(factors: &[(&'static str, u32)]) -> GeometryProduct {
        let value = factors.iter().try_fold(1u128, |product, &(_, factor)| product.checked_mul(u128::from(factor)));
        let names: Vec<&str> = factors.iter().map(|&(name, _)| name).collect();
        let values: Vec<String> = factors.iter().map(|&(_, factor)| factor.to_string()).collect();
        let formula = format!("the geometry {} = {}", names.join(" × "), values.join(" × "));
        GeometryProduct { value, formula }
    }

    /// The product if it is at most `limit`, else an error naming the product.
    fn at_most(&self, limit: u64, what: &str) -> Result<u64, ConfigError> {
        match self.value.map(u64::try_from) {
            Some(Ok(value)) if value <= limit => Ok(value),
            Some(_) => Err(ConfigError::new(
                "device",
                format!("{} = {} {what} exceeds the supported {limit}", self.formula, self.value.unwrap_or_default()),
            )),
            None => Err(ConfigError::new("device", format!("{} overflows 128 bits", self.formula))),
        }
    }
}

fn one() -> u32 {
    1
}

fn default_pe_cycles() -> u32 {
    3000
}

/// Validated geometry with derived sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_size: u32,
    pub logical_pages: u32,
    pub pe_cycles: u32,
    /// log2(pages_per_block) when it is a power of two: page-to-block
    /// arithmetic on the write path then shifts instead of dividing.
    #[serde(skip)]
    page_shift: Option<u32>,
    /// log2(blocks_per_plane) when it is a power of two, likewise for
    /// block-to-unit arithmetic (every invalidation needs the unit).
    #[serde(skip)]
    block_shift: Option<u32>,
}

/// Where a parallel unit sits in the hardware hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitLocation {
    pub channel: u32,
    pub chip: u32,
    pub die: u32,
    pub plane: u32,
}

impl Geometry {
    /// Validates a `[device]` section. Every error names the offending key.
    pub fn from_config(config: &DeviceConfig) -> Result<Self, ConfigError> {
        let positive = [
            ("device.channels", config.channels),
            ("device.chips_per_channel", config.chips_per_channel),
            ("device.dies_per_chip", config.dies_per_chip),
            ("device.planes_per_die", config.planes_per_die),
            ("device.blocks_per_plane", config.blocks_per_plane),
            ("device.pages_per_block", config.pages_per_block),
            ("device.page_size", config.page_size),
            ("device.pe_cycles", config.pe_cycles),
        ];
        for ((key, value), (_, max)) in positive.into_iter().zip(DEVICE_KEY_MAX) {
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1"));
            }
            if value > max {
                return Err(ConfigError::new(key, format!("{value} exceeds the limit of {max}")));
            }
        }
        if config.pages_per_block < 2 {
            return Err(ConfigError::new(
                "device.pages_per_block",
                "must be at least 2: a one-page block is never partly invalid, so garbage collection cannot reclaim space",
            ));
        }
        if !config.page_size.is_multiple_of(512) {
            return Err(ConfigError::new(
                "device.page_size",
                format!("{} bytes is not a multiple of the 512-byte sector", config.page_size),
            ));
        }
        let physical_pages = config.physical_pages()?;
        if config.blocks_per_plane < 4 {
            return Err(ConfigError::new(
                "device.blocks_per_plane",
                "must be at least 4: garbage collection keeps free blocks in reserve per plane",
            ));
        }
        let logical_pages = logical_capacity(config, physical_pages)?;
        Ok(Self {
            channels: config.channels,
            chips_per_channel: config.chips_per_channel,
            dies_per_chip: config.dies_per_chip,
            planes_per_die: config.planes_per_die,
            blocks_per_plane: config.blocks_per_plane,
            pages_per_block: config.pages_per_block,
            page_size: config.page_size,
            logical_pages,
            pe_cycles: config.pe_cycles,
            page_shift: config.pages_per_block.is_power_of_two().then(|| config.pages_per_block.trailing_zeros()),
            block_shift: config.blocks_per_plane.is_power_of_two().then(|| config.blocks_per_plane.trailing_zeros()),
        })
    }

    /// Parallel units (planes) in the device.
    pub fn units(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip * self.planes_per_die
    }

    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }

    pub fn blocks(&self) -> u32 {
        self.units() * self.blocks_per_plane
    }

    pub fn physical_pages(&self) -> u32 {
        self.blocks() * self.pages_per_block
    }

    /// ρ = physical pages / logical pages − 1.
    pub fn over_provisioning(&self) -> f64 {
        f64::from(self.physical_pages()) / f64::from(self.logical_pages) - 1.0
    }

    pub fn logical_bytes(&self) -> u64 {
        u64::from(self.logical_pages) * u64::from(self.page_size)
    }

    pub fn physical_bytes(&self) -> u64 {
        u64::from(self.physical_pages()) * u64::from(self.page_size)
    }

    /// Units are numbered channel first, so consecutive units sit on different
    /// channels and round-robin striping uses channel parallelism first.
    pub fn unit_location(&self, unit: UnitId) -> UnitLocation {
        let mut rest = unit.0;
        let channel = rest % self.channels;
        rest /= self.channels;
        let chip = rest % self.chips_per_channel;
        rest /= self.chips_per_channel;
        let die = rest % self.dies_per_chip;
        let plane = rest / self.dies_per_chip;
        UnitLocation { channel, chip, die, plane }
    }

    /// The die a unit belongs to, numbered like units without the plane level.
    pub fn die_of_unit(&self, unit: UnitId) -> u32 {
        unit.0 % self.dies()
    }

    #[inline]
    pub fn unit_of_block(&self, block: BlockId) -> UnitId {
        match self.block_shift {
            Some(shift) => UnitId(block.0 >> shift),
            None => UnitId(block.0 / self.blocks_per_plane),
        }
    }

    pub fn first_block_of_unit(&self, unit: UnitId) -> BlockId {
        BlockId(unit.0 * self.blocks_per_plane)
    }

    #[inline]
    pub fn block_of_page(&self, page: Ppn) -> BlockId {
        match self.page_shift {
            Some(shift) => BlockId(page.0 >> shift),
            None => BlockId(page.0 / self.pages_per_block),
        }
    }

    #[inline]
    pub fn page_in_block(&self, page: Ppn) -> u32 {
        match self.page_shift {
            Some(shift) => page.0 & ((1 << shift) - 1),
            None => page.0 % self.pages_per_block,
        }
    }

    pub fn page_address(&self, block: BlockId, page_in_block: u32) -> Ppn {
        Ppn(block.0 * self.pages_per_block + page_in_block)
    }

    /// Sectors (512 bytes) per flash page.
    pub fn sectors_per_page(&self) -> u32 {
        self.page_size / 512
    }
}

/// ρ is a ratio in (0, 1): 0 leaves GC nothing to reclaim into, and 1 or
/// more (half the flash or more kept spare) is far beyond any real device —
/// almost always a percentage typed where the ratio belongs ("12.5" for 12.5 %).
fn validate_over_provisioning(rho: f64) -> Result<(), ConfigError> {
    let key = "device.over_provisioning";
    if !rho.is_finite() || rho <= 0.0 {
        return Err(ConfigError::new(key, format!("{rho} must be a positive ratio (ρ = physical / logical − 1)")));
    }
    if rho >= 1.0 {
        return Err(ConfigError::new(
            key,
            format!(
                "{rho} is not a ratio below 1 (ρ = physical / logical − 1; 1 would keep half the flash spare): \
                 did you mean {}? (a percentage divided by 100)",
                rho / 100.0
            ),
        ));
    }
    Ok(())
}

fn logical_capacity(config: &DeviceConfig, physical_pages: u64) -> Result<u32, ConfigError> {
    let pages_per_block = u64::from(config.pages_per_block);
    let logical_pages = match (config.logical_pages, config.over_provisioning) {
        (Some(pages), _) => pages,
        (None, Some(rho)) => {
            validate_over_provisioning(rho)?;
            // Truncation is the point: logical capacity rounds down to whole pages.
            saturating::<u64>((f64_of(physical_pages) / (1.0 + rho)).floor())
        }
        (None, None) => {
            return Err(ConfigError::new("device", "set either `over_provisioning` (ρ) or `logical_pages`"))
        }
    };
    if logical_pages == 0 {
        return Err(ConfigError::new("device.logical_pages", "must be at least 1"));
    }
    if logical_pages.saturating_add(pages_per_block) > physical_pages {
        return Err(ConfigError::new(
            "device.logical_pages",
            format!(
                "{logical_pages} logical pages leave less than one block of spare space in \
                 {physical_pages} physical pages; garbage collection needs over-provisioning"
            ),
        ));
    }
    u32::try_from(logical_pages).map_err(|_| ConfigError::new("device.logical_pages", "too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(blocks_per_plane: u32, pages_per_block: u32) -> Geometry {
        let config = DeviceConfig {
            channels: 2,
            chips_per_channel: 3,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane,
            pages_per_block,
            page_size: 4096,
            over_provisioning: Some(0.25),
            logical_pages: None,
            pe_cycles: 3000,
        };
        Geometry::from_config(&config).expect("valid geometry")
    }

    #[test]
    fn address_arithmetic_is_the_same_whether_it_shifts_or_divides() {
        for (blocks_per_plane, pages_per_block) in [(64, 64), (48, 64), (64, 48), (37, 13)] {
            let geometry = geometry(blocks_per_plane, pages_per_block);
            for page in 0..geometry.physical_pages() {
                let block = geometry.block_of_page(Ppn(page));
                assert_eq!(block.0, page / pages_per_block);
                assert_eq!(geometry.page_in_block(Ppn(page)), page % pages_per_block);
                assert_eq!(geometry.unit_of_block(block).0, block.0 / blocks_per_plane);
            }
        }
    }

    /// Issue 28: six keys, each at its bound, multiply to 2^72; the product
    /// wrapped in u64 and the error blamed `device.logical_pages`.
    #[test]
    fn the_2_72_geometry_is_refused_naming_the_product() {
        let config = DeviceConfig {
            channels: 1024,
            chips_per_channel: 1024,
            dies_per_chip: 64,
            planes_per_die: 64,
            blocks_per_plane: 1 << 24,
            pages_per_block: 1 << 16,
            page_size: 4096,
            over_provisioning: Some(0.25),
            logical_pages: None,
            pe_cycles: 3000,
        };
        let error = Geometry::from_config(&config).expect_err("refused");
        assert_eq!(error.key, "device");
        let product = (1u128 << 72).to_string();
        assert!(error.reason.contains("channels × chips_per_channel × dies_per_chip"), "{error}");
        assert!(error.reason.contains(&format!("= {product} physical pages exceeds")), "{error}");
        let error = config.fitted_to(1 << 40).expect_err("refused when fitted too");
        assert_eq!(error.key, "device", "{error}");
        let huge_logical = DeviceConfig {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 64,
            pages_per_block: 64,
            logical_pages: Some(u64::MAX),
            ..config
        };
        let error = Geometry::from_config(&huge_logical).expect_err("refused");
        assert_eq!(error.key, "device.logical_pages", "{error}");
    }
}
