//! One module per subcommand: its clap arguments and a `run` function.

pub mod admit;
pub mod capture;
pub mod dhrd;
pub mod reproduce;
pub mod trace;
