//! One module per paper experiment; [`crate::registry`] names them.

pub mod delay_d_proportions;
pub mod dhrd;
pub mod discard;
pub mod journal;
pub mod periodic_run;
pub mod telomere;
pub mod telomere_sim;
pub mod timing;
