//! Task and device files with arbitrary numbers: parsing never panics, and a
//! file that parses gives finite admission results (issue 15: a period of
//! 1e300 panicked `nandlab admit`, one of 1e-12 printed "load inf").

use nandlab_admission::policy::{check, AdmissionContext, Policy};
use nandlab_admission::storage::Placement;
use nandlab_admission::{DeviceParams, TaskSet};
use proptest::prelude::*;
use std::path::Path;

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (1_u64..100_000).prop_map(|value| value.to_string()),
        1 => any::<i64>().prop_map(|value| value.to_string()),
        1 => any::<f64>().prop_map(|value| format!("{value:?}")),
        1 => prop::sample::select(vec!["1e300", "1e-12", "-0.0", "0.0", "inf", "-inf", "nan", "4294967297", "1e10"])
            .prop_map(str::to_owned),
    ]
}

proptest! {
    #[test]
    fn any_task_numbers_give_an_error_or_finite_loads(
        values in prop::collection::vec(number(), 5),
        granularity in prop::sample::select(vec![1_u64, 4, 32, 64]),
        sharp in any::<bool>(),
    ) {
        let text = format!(
            "[[task]]\nread_pages = {}\nread_period_ms = {}\nwrite_pages = {}\nwrite_period_ms = {}\nlifetime_periods = {}\n",
            values[0], values[1], values[2], values[3], values[4]
        );
        let Ok(set) = TaskSet::parse(&text, Path::new("fuzz.toml")) else { return Ok(()) };
        let context = AdmissionContext::new(DeviceParams::cosmos(), granularity, 0.9).expect("valid context");
        let placement = if sharp { Placement::Sharp } else { Placement::Sip };
        let verdict = check(&Policy::Telomere { placement }, &context, &set.tasks);
        prop_assert!(verdict.throughput.load().is_finite(), "{text}: {verdict:?}");
    }

    #[test]
    fn any_device_numbers_give_an_error_or_a_usable_device(values in prop::collection::vec(number(), 8)) {
        let keys = ["channels", "chips_per_channel", "blocks_per_chip", "pages_per_block", "page_size_bytes", "read_us", "write_us", "erase_us"];
        let text: String = keys.iter().zip(&values).map(|(key, value)| format!("{key} = {value}\n")).collect();
        let Ok(device) = DeviceParams::parse(&text, Path::new("fuzz.toml")) else { return Ok(()) };
        prop_assert!(device.pages() >= 1 && device.pages() < 1 << 56);
        prop_assert!(!device.erase.is_zero() && device.write_pages_per_second().is_finite());
        prop_assert!(AdmissionContext::new(device, 1, 0.9).is_ok());
    }
}
