//! Configuration errors name the key and say why.

use super::*;

fn build(overrides: &[&str]) -> Result<Config, ConfigError> {
    let mut builder = ConfigBuilder::preset("small")?;
    for assignment in overrides {
        builder.set(assignment)?;
    }
    builder.build().map(|(config, _)| config)
}

#[test]
fn every_preset_is_valid() {
    for name in preset_names() {
        let (config, geometry) = ConfigBuilder::preset(name).and_then(ConfigBuilder::build).expect(name);
        assert_eq!(config.name.as_deref(), Some(name));
        assert!(geometry.logical_pages < geometry.physical_pages());
    }
}

#[test]
fn femu_preset_matches_the_paper() {
    let (_, geometry) = ConfigBuilder::preset("femu-32g").and_then(ConfigBuilder::build).expect("valid");
    assert_eq!(geometry.physical_pages(), 8_388_608);
    assert_eq!(geometry.page_size, 4096);
    assert!((geometry.over_provisioning() - 0.125).abs() < 1e-6);
}

/// The device presets' derived numbers (docs/configuration.md, "Device
/// presets"): the logical capacity is the rated one in whole pages; the dies
/// are the fewest whose power-of-two raw capacity holds it; each die is its
/// nominal capacity less under one block per plane (the datasheets' extra
/// reserve blocks left out).
#[test]
fn device_presets_hold_their_rated_capacity_on_nominal_dies() {
    const GB: u64 = 1_000_000_000;
    const GBIT: u64 = 1 << 27;
    for (name, rated_bytes, die_bytes) in [
        ("emmc-mlc-64g", 64 * GB, 128 * GBIT),
        ("emmc-tlc-64g", 64 * GB, 512 * GBIT),
        ("ufs31-tlc-128g", 128 * GB, 512 * GBIT),
        ("sata-tlc-1tb", 1000 * GB, 256 * GBIT),
        ("nvme-tlc-1tb", 1000 * GB, 256 * GBIT),
    ] {
        let (_, geometry) = preset_config(name).expect(name);
        let page = u64::from(geometry.page_size);
        let logical = u64::from(geometry.logical_pages) * page;
        assert!(logical <= rated_bytes && rated_bytes - logical < page, "{name}: {logical} logical bytes");
        assert_eq!(u64::from(geometry.dies()), rated_bytes.div_ceil(die_bytes).next_power_of_two(), "{name}");
        let block = u64::from(geometry.pages_per_block) * page;
        let planes = u64::from(geometry.planes_per_die);
        let die_flash = planes * u64::from(geometry.blocks_per_plane) * block;
        assert!(die_flash <= die_bytes && die_bytes - die_flash < planes * block, "{name}: {die_flash} bytes per die");
        assert!(geometry.over_provisioning() > 0.07 && geometry.over_provisioning() < 0.1, "{name}");
    }
}

/// `device.capacity` derives the blocks per plane (docs/configuration.md,
/// `[device]`): the logical capacity is the given bytes exactly, the flash
/// the fewest whole blocks per plane at the preset's ρ or above.
#[test]
fn capacity_derives_blocks_per_plane_at_the_presets_over_provisioning() {
    let mut builder = ConfigBuilder::preset("femu-32g").expect("preset");
    builder.set("device.capacity=64GB").expect("capacity");
    let (_, geometry) = builder.build().expect("valid");
    let logical_pages = 64_000_000_000 / 4096;
    assert_eq!(u64::from(geometry.logical_pages), logical_pages);
    let units_pages = u64::from(geometry.units() * geometry.pages_per_block);
    let blocks = (logical_pages * 1125).div_ceil(1000).div_ceil(units_pages);
    assert_eq!(u64::from(geometry.blocks_per_plane), blocks);
    let rho = geometry.over_provisioning();
    // Whole blocks add less than one block per unit to the flash asked for.
    assert!((0.125..0.125 + units_pages as f64 / logical_pages as f64).contains(&rho), "{rho}");
    // Without over_provisioning, the ratio the preset's geometry gives.
    let mut builder = ConfigBuilder::preset("emmc-tlc-64g").expect("preset");
    builder.set("device.capacity=\"32GB\"").expect("capacity");
    let (_, geometry) = builder.build().expect("valid");
    assert_eq!(u64::from(geometry.logical_pages), 32_000_000_000 / 16384);
    assert!(geometry.over_provisioning() >= 0.0734, "{}", geometry.over_provisioning());
}

#[test]
fn a_capacity_that_does_not_divide_or_parse_is_refused_by_key() {
    let whole_pages = ConfigBuilder::preset("emmc-tlc-64g").and_then(|mut builder| {
        builder.set("device.capacity=1TB")?;
        builder.build()
    });
    let error = whole_pages.expect_err("10^12 is not a whole number of 16 KiB pages");
    assert_eq!(error.key, "device.capacity");
    assert!(error.reason.contains("999999995904 and 1000000012288 bytes"), "{error}");
    for (value, needle) in
        [("\"64 parsecs\"", "unknown unit suffix"), ("0", "at least one page"), ("true", "found boolean")]
    {
        let error = build(&[&format!("device.capacity={value}")]).expect_err(value);
        assert_eq!(error.key, "device.capacity", "{value}");
        assert!(error.reason.contains(needle), "{value}: {error}");
    }
}

#[test]
fn unknown_key_is_named() {
    let error = build(&["ftl.gc_polcy=\"fifo\""]).expect_err("unknown key");
    assert_eq!(error.key, "ftl.gc_polcy");
    assert!(error.reason.contains("gc_polcy"), "{error}");
}

#[test]
fn wrong_type_is_named() {
    let error = build(&["device.channels=\"eight\""]).expect_err("wrong type");
    assert_eq!(error.key, "device.channels");
    let error = build(&["ftl.gc_policy=\"lru\""]).expect_err("unknown variant");
    assert_eq!(error.key, "ftl.gc_policy");
    assert!(error.reason.contains("greedy"), "{error}");
}

#[test]
fn impossible_geometry_is_explained() {
    assert_eq!(build(&["device.channels=0"]).expect_err("zero").key, "device.channels");
    assert_eq!(build(&["device.page_size=1000"]).expect_err("sector").key, "device.page_size");
    assert_eq!(build(&["device.over_provisioning=-0.1"]).expect_err("negative").key, "device.over_provisioning");
    assert_eq!(build(&["device.logical_pages=16384"]).expect_err("no spare").key, "device.logical_pages");
    assert_eq!(
        build(&["device.blocks_per_plane=16000000", "device.pages_per_block=128"]).expect_err("too big").key,
        "device"
    );
    assert_eq!(
        build(&["device.blocks_per_plane=100000000"]).expect_err("above the limit").key,
        "device.blocks_per_plane"
    );
    assert_eq!(build(&["ftl.gc_threshold_blocks=1"]).expect_err("reserve").key, "ftl.gc_threshold_blocks");
    assert_eq!(build(&["ftl.streams=300"]).expect_err("streams").key, "ftl.streams");
    assert_eq!(build(&["device.blocks_per_plane=4"]).expect_err("reserve").key, "device.blocks_per_plane");
    assert_eq!(build(&["ftl.gc_threshold_blocks=100000"]).expect_err("reserve").key, "ftl.gc_threshold_blocks");
    // Valid for Telomere's placement, but a synthetic run fills the device and GC would stall.
    let (tight, _) = ConfigBuilder::preset("small")
        .and_then(|mut builder| builder.set("device.over_provisioning=0.07").map(|_| builder))
        .and_then(ConfigBuilder::build)
        .expect("a valid configuration");
    let error = crate::Simulation::new(&tight).map(drop).expect_err("too little spare for a full device");
    assert!(error.to_string().contains("device.over_provisioning"), "{error}");
}

/// Issue 26: a percentage typed where a ratio belongs ran with a device
/// of 1,213 logical pages and WAF 1.000. Every ratio key outside its range
/// is refused by name; the keys whose ends are legitimate accept them.
#[test]
fn every_ratio_key_outside_its_range_is_refused_by_name() {
    let op = build(&["device.over_provisioning=12.5"]).expect_err("a percentage");
    assert_eq!(op.key, "device.over_provisioning");
    assert!(op.reason.contains("did you mean 0.125?"), "{op}");
    assert!(build(&["device.over_provisioning=1"]).is_err(), "ρ = 1 keeps half the flash spare");
    assert!(build(&["device.over_provisioning=0.99"]).is_ok());
    let refused = [
        ("device.over_provisioning=0", "device.over_provisioning"),
        ("workload.read_fraction=1.5", "workload.read_fraction"),
        ("workload.trim_fraction=-0.1", "workload.trim_fraction"),
        ("workload.hot_write_fraction=1", "workload.hot_write_fraction"),
        ("workload.hot_space_fraction=0", "workload.hot_space_fraction"),
        ("precondition.fill_fraction=0", "precondition.fill_fraction"),
        ("precondition.fill_fraction=50", "precondition.fill_fraction"),
        ("precondition.steady_tolerance=1", "precondition.steady_tolerance"),
        ("timing.priority_fraction=5", "timing.priority_fraction"),
        ("lifetime.worn_share=2", "lifetime.worn_share"),
        ("lifetime.rber_limit=1", "lifetime.rber_limit"),
        ("job=name=a,range_start=1,requests=1", "job.a.range_start"),
        ("job=name=a,range_start=-0.5,requests=1", "job.a.range_start"),
        ("job=name=a,range_end=10,requests=1", "job.a.range_end"),
        ("job=name=a,range_end=0,requests=1", "job.a.range_end"),
    ];
    for (assignment, key) in refused {
        assert_eq!(build(&[assignment]).expect_err(assignment).key, key, "{assignment}");
    }
    let tolerance = build(&["precondition.steady_tolerance=3"]).expect_err("a percentage");
    assert!(tolerance.reason.contains("did you mean 0.03?"), "{tolerance}");
    // The ends that mean something: all reads, all trims, the whole device, every request a priority one.
    let accepted = [
        "workload.read_fraction=1",
        "workload.trim_fraction=1",
        "precondition.fill_fraction=1",
        "timing.priority_fraction=1",
        "timing.priority_fraction=0",
        "lifetime.worn_share=1",
        "job=name=a,range_start=0,range_end=1,requests=1",
    ];
    for assignment in accepted {
        assert!(build(&[assignment]).is_ok(), "{assignment}");
    }
}

#[test]
fn a_classifier_s_classes_each_need_an_open_block_of_a_full_device() {
    let config = |classifier: &str| {
        let overrides = ["device.over_provisioning=0.10", "ftl.streams=3", classifier];
        let (config, _) = ConfigBuilder::preset("small")
            .and_then(|mut builder| overrides.iter().try_for_each(|o| builder.set(o)).map(|()| builder))
            .and_then(ConfigBuilder::build)
            .expect("a valid configuration");
        config
    };
    assert_eq!(config("host.classifier=none").host_streams(), 1);
    assert_eq!(config("host.classifier=journal").host_streams(), 2);
    assert_eq!(config("host.classifier=journal-metadata").host_streams(), 3);
    assert_eq!(config("host.classifier=journal-hot-cold").host_streams(), 3);
    // Five spare blocks per plane: enough for one stream, not for three classes.
    crate::Simulation::new(&config("host.classifier=none")).expect("one stream fits");
    let error =
        crate::Simulation::new(&config("host.classifier=journal-metadata")).map(drop).expect_err("three do not");
    assert!(error.to_string().contains("3 host streams"), "{error}");
}

#[test]
fn wao_gc_refuses_a_classifier_whose_streams_it_would_merge() {
    let wao_gc = |classifier: &str| {
        let config = build(&["ftl.kind=\"wao-gc\"", &format!("host.classifier=\"{classifier}\"")]).expect("valid keys");
        crate::Simulation::new(&config)
    };
    let refused = wao_gc("journal");
    let Err(crate::SimError::Config(error)) = refused else {
        panic!("WAO-GC took two streams: {:?}", refused.map(|_| ()))
    };
    assert_eq!(error.key, "host.classifier");
    assert!(wao_gc("none").is_ok());
}

#[test]
fn workload_errors_are_named() {
    assert_eq!(build(&["workload.read_fraction=1.5"]).expect_err("fraction").key, "workload.read_fraction");
    assert_eq!(build(&["workload.request_pages=0"]).expect_err("size").key, "workload.request_pages");
    assert_eq!(build(&["workload.requests=5", "workload.bytes=5"]).expect_err("two lengths").key, "workload");
    assert_eq!(build(&["workload.stream=9"]).expect_err("stream").key, "workload.stream");
    assert_eq!(build(&["workload.requests=0"]).expect_err("empty run").key, "workload.requests");
    assert_eq!(build(&["workload.bytes=0"]).expect_err("empty run").key, "workload.bytes");
}

#[test]
fn override_syntax_is_checked() {
    assert!(build(&["ftl.streams"]).is_err());
    assert!(build(&["=3"]).is_err());
    assert_eq!(build(&["device.channels.x=3"]).expect_err("value").key, "device.channels");
    assert!(ConfigBuilder::preset("nope").expect_err("unknown").reason.contains("femu-32g"));
}

#[test]
fn files_layer_over_presets() {
    let mut builder = ConfigBuilder::new();
    builder.merge_toml("preset = \"small\"\nseed = 9\n[ftl]\ngc_policy = \"fifo\"\n", "test.toml").expect("parses");
    let (config, _) = builder.build().expect("valid");
    assert_eq!(config.seed, 9);
    assert_eq!(config.ftl.gc_policy, crate::ftl::VictimPolicy::Fifo);
    assert_eq!(config.device.channels, 2);
}

#[test]
fn syntax_errors_name_the_origin() {
    let error = ConfigBuilder::new().merge_toml("[device\nchannels = 1", "bad.toml").expect_err("syntax");
    assert!(error.reason.starts_with("bad.toml"), "{error}");
}

/// Regression tests of issue 11 (hardening), named after the bugs.
mod hardening {
    use crate::config::{from_sources, ConfigBuilder, ConfigError, Document};

    fn error(overrides: &[&str]) -> ConfigError {
        let mut builder = ConfigBuilder::preset("small").expect("preset");
        for assignment in overrides {
            builder.set(assignment).expect("parses");
        }
        builder.build().expect_err("must be refused")
    }

    #[test]
    fn discard_delay_and_period_of_2_64_ms_do_not_wrap() {
        for key in ["discard.delay_ms", "discard.period_ms"] {
            let refused = error(&[&format!("{key}=18446744073710")]);
            assert_eq!(refused.key, key);
            assert!(refused.reason.contains("a day"), "{refused}");
        }
    }

    #[test]
    fn gc_low_blocks_of_2_32_minus_1_does_not_wrap_past_its_check() {
        assert_eq!(error(&["timing.gc_low_blocks=4294967295"]).key, "timing.gc_low_blocks");
    }

    #[test]
    fn gc_threshold_of_2_32_minus_1_is_blamed_on_that_key() {
        assert_eq!(error(&["ftl.gc_threshold_blocks=4294967295"]).key, "ftl.gc_threshold_blocks");
    }

    #[test]
    fn pages_per_block_of_1_is_refused_at_validation() {
        assert_eq!(error(&["device.pages_per_block=1", "device.blocks_per_plane=4096"]).key, "device.pages_per_block");
    }

    #[test]
    fn huge_queues_rates_series_latencies_and_choices_are_refused() {
        for (assignment, key) in [
            ("timing.queue_depth=4294967295", "timing.queue_depth"),
            ("timing.queues=4294967295", "timing.queues"),
            ("timing.channel_bytes_per_s=1", "timing.channel_bytes_per_s"),
            ("timing.series_interval_ns=1", "timing.series_interval_ns"),
            ("timing.read_ns=9223372036854775000", "timing.read_ns"),
            ("timing.program_ns=9223372036854775000", "timing.program_ns"),
            ("timing.erase_ns=9223372036854775000", "timing.erase_ns"),
            ("timing.discard_entry_ns=9223372036854775000", "timing.discard_entry_ns"),
            ("timing.stripe_pages=12288", "timing.stripe_pages"),
            ("device.blocks_per_plane=4294967295", "device.blocks_per_plane"),
            ("device.channels=4294967295", "device.channels"),
        ] {
            assert_eq!(error(&[assignment]).key, key, "{assignment}");
        }
        let choices = error(&["ftl.gc_policy=\"d-choices\"", "ftl.d_choices=4294967295"]);
        assert_eq!(choices.key, "ftl.d_choices");
    }

    #[test]
    fn the_command_line_preset_replaces_a_files_preset_under_the_files_keys() {
        let file = Document::Toml { text: "preset = \"femu-32g\"\nseed = 9\n", origin: "f.toml" };
        let (config, _) = from_sources(Some("small"), Some(file), &[], None).expect("valid");
        let (small, _) = from_sources(Some("small"), None, &["seed=9".to_owned()], None).expect("valid");
        assert_eq!(config, small, "nothing of femu-32g (its DISCARD cost) survives; the file's seed does");
    }

    #[test]
    fn set_preset_does_not_reapply_over_the_files_keys() {
        let file = || Document::Toml {
            text: "preset = \"femu-32g\"\nseed = 9\n[ftl]\ngc_policy = \"fifo\"\n",
            origin: "f.toml",
        };
        let (config, geometry) = from_sources(None, Some(file()), &["preset=small".to_owned()], None).expect("valid");
        assert_eq!((config.seed, config.name.as_deref()), (9, Some("small")));
        assert_eq!(config.ftl.gc_policy, crate::ftl::VictimPolicy::Fifo);
        assert_eq!(geometry.blocks_per_plane, 64);
    }
}

/// Every size-like key with a unit resolves to the same configuration as its
/// native number (docs/configuration.md, "Sizes with units"): the same
/// `Config`, so the same run and the same report.
#[test]
fn every_size_key_with_a_unit_equals_its_native_number() {
    let same = [
        (vec!["device.page_size=\"4KiB\""], vec!["device.page_size=4096"]),
        (vec!["device.logical_pages=\"48MiB\""], vec!["device.logical_pages=12288"]),
        (vec!["workload.request_pages=\"8KiB\""], vec!["workload.request_pages=2"]),
        (vec!["workload.request_size=\"8KiB\""], vec!["workload.request_pages=2"]),
        (vec!["workload.request_size=16384"], vec!["workload.request_pages=4"]),
        (vec!["workload.bytes=\"1MiB\""], vec!["workload.bytes=1048576"]),
        (vec!["workload.bytes=1MB"], vec!["workload.bytes=1000000"]),
        (vec!["metrics.window_pages=\"4MiB\""], vec!["metrics.window_pages=1024"]),
        (vec!["timing.channel_bytes_per_s=\"800MB/s\""], vec!["timing.channel_bytes_per_s=800000000"]),
        (vec!["timing.write_buffer_pages=\"1MiB\""], vec!["timing.write_buffer_pages=256"]),
        (vec!["timing.stripe_pages=\"16KiB\""], vec!["timing.stripe_pages=4"]),
        (vec!["pblk.ws_min_pages=\"16KiB\""], vec!["pblk.ws_min_pages=4"]),
        (vec!["pblk.ws_opt_pages=\"32K\""], vec!["pblk.ws_opt_pages=8"]),
        (vec!["pblk.write_buffer_pages=\"4MiB\""], vec!["pblk.write_buffer_pages=1024"]),
        (vec!["job=name=a,request_size=16KiB,bytes=2MiB"], vec!["job=name=a,request_pages=4,bytes=2097152"]),
        (vec!["job=name=a", "job.a.request_pages=12KiB"], vec!["job=name=a,request_pages=3"]),
    ];
    for (with_units, native) in same {
        let resolved = build(&with_units).unwrap_or_else(|error| panic!("{with_units:?}: {error}"));
        let expected = build(&native).unwrap_or_else(|error| panic!("{native:?}: {error}"));
        assert_eq!(resolved, expected, "{with_units:?}");
    }
    let unchanged = build(&["workload.request_pages=2"]).expect("native pages");
    assert_eq!(unchanged.workload.request_pages, 2);
}

#[test]
fn a_size_with_a_bad_unit_or_not_whole_pages_is_refused_by_key() {
    for (assignment, key, needle) in [
        (
            "workload.request_size=6KiB",
            "workload.request_size",
            "nearest whole-page sizes are 4096 bytes (\"4KiB\") and 8192 bytes (\"8KiB\")",
        ),
        ("workload.request_pages=\"512B\"", "workload.request_pages", "nearest whole-page size is 4096 bytes"),
        ("workload.request_pages=\"4 parsecs\"", "workload.request_pages", "unknown unit suffix"),
        ("workload.request_pages=\"8\"", "workload.request_pages", "has no unit"),
        ("timing.write_buffer_pages=1XB", "timing.write_buffer_pages", "unknown unit suffix"),
        ("device.page_size=4 parsecs", "device.page_size", "unknown unit suffix"),
        ("workload.request_size=true", "workload.request_size", "found boolean"),
    ] {
        let error = build(&[assignment]).expect_err(assignment);
        assert_eq!(error.key, key, "{assignment}: {error}");
        assert!(error.reason.contains(needle), "{assignment}: {error}");
    }
    let error = build(&["job=name=bulk", "job.bulk.request_size=5000"]).expect_err("not whole pages");
    assert_eq!(error.key, "job.bulk.request_size", "{error}");
}
