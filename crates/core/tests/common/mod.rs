//! Helpers shared by the integration tests.

#![allow(dead_code)]

use nandlab_core::device::Geometry;
use nandlab_core::{Config, ConfigBuilder};

/// Builds a config from a preset and overrides, panicking with the error.
pub fn config(preset: &str, overrides: &[&str]) -> (Config, Geometry) {
    let mut builder = ConfigBuilder::preset(preset).expect("preset exists");
    for assignment in overrides {
        builder.set(assignment).expect("valid override");
    }
    builder.build().unwrap_or_else(|error| panic!("{error}"))
}

/// A single-unit device of `blocks` blocks of 256 pages at over-provisioning ρ.
pub fn single_unit(blocks: u32, rho: f64, policy: &str) -> (Config, Geometry) {
    config(
        "small",
        &[
            "device.channels=1",
            "device.chips_per_channel=1",
            &format!("device.blocks_per_plane={blocks}"),
            "device.pages_per_block=256",
            &format!("device.over_provisioning={rho}"),
            &format!("ftl.gc_policy=\"{policy}\""),
            "ftl.streams=1",
        ],
    )
}
