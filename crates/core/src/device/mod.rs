//! The flash device model: geometry and the flash array, which sees physical
//! pages only and enforces the rules of NAND flash.

pub mod capacity;
mod flash;
mod geometry;
pub mod open_channel;
pub mod wear;

pub use flash::{DeviceError, FlashArray};
pub use geometry::{DeviceConfig, Geometry, UnitLocation, PHYSICAL_PAGES_MAX};
