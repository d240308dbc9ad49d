//! `nandlab-admission`: Telomere's real-time admission control (Missimer,
//! Athanassoulis and West, "Telomere: Real-Time NAND Flash Storage", ACM TECS
//! 2022) and the baselines it is compared against.
//!
//! - [`task`]: the task model of Section 3.1 and the task-set TOML format;
//! - [`device`]: the SSD parameters of Table 1, the paper's two devices and
//!   device TOML files;
//! - [`storage`]: storage admission, SiP (eq. 5-11) and SharP (eq. 12-16,
//!   Algorithm 1), producing a [`storage::StoragePlan`] the FTL can place by;
//! - [`throughput`]: EDF throughput admission (eq. 17-20), WAO-GC's costs
//!   (eq. 25-26) and bank reservation for MultiLog-Oracle;
//! - [`policy`]: the four admission policies of Section 6.1;
//! - [`incremental`]: per-task admission in `open()` order;
//! - [`generator`]: UUniFast task sets (eq. 21-23);
//! - [`sweep`]: the schedulability sweeps behind Figures 7-9.

mod admitted;
pub mod device;
mod error;
pub mod generator;
pub mod incremental;
mod limits;
pub mod policy;
pub mod storage;
pub mod sweep;
pub mod task;
pub mod throughput;
mod toml_file;

pub use device::DeviceParams;
pub use error::AdmissionError;
pub use task::{Periodic, Task, TaskSet};
