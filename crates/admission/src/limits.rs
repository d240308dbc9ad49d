//! Range checks for the numbers in task and device files: every key finite,
//! positive and below a stated maximum, so that nothing downstream overflows
//! or divides by zero. Callers attach the file, line, task and key.

use nandlab_convert::{f64_of, saturating};
use serde::Deserialize;

/// A TOML number as written: integer or float, so that `pages = 1e300` or
/// `pages = -3` get the same clear message as any other out-of-range value.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
pub(crate) enum Number {
    Integer(i64),
    Float(f64),
}

impl Number {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Self::Integer(value) => f64_of(value),
            Self::Float(value) => value,
        }
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Integer(value) => write!(formatter, "{value}"),
            // `{:?}` keeps 1e300 and 1e-12 short where `{}` writes every digit.
            Self::Float(value) => write!(formatter, "{value:?}"),
        }
    }
}

/// A whole number in `min..=max`.
pub(crate) fn integer(value: Number, min: u64, max: u64) -> Result<u64, String> {
    match value {
        Number::Integer(value) => u64::try_from(value).ok(),
        Number::Float(value) if value.fract() == 0.0 && (0.0..=1e19).contains(&value) => Some(saturating(value)),
        Number::Float(_) => None,
    }
    .filter(|whole| (min..=max).contains(whole))
    .ok_or_else(|| format!("must be a whole number from {min} to {max}, got {value}"))
}

/// A finite number in `min..=max`, `unit` naming what it counts.
pub(crate) fn real(value: Number, min: f64, max: f64, unit: &str) -> Result<f64, String> {
    let real = value.as_f64();
    if real.is_finite() && real >= min && real <= max {
        Ok(real)
    } else {
        Err(format!("must be a finite number of {unit} from {min} to {max}, got {value}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_are_refused_with_the_range() {
        assert_eq!(integer(Number::Integer(7), 1, 8), Ok(7));
        assert_eq!(integer(Number::Float(7.0), 1, 8), Ok(7));
        for bad in [Number::Integer(-1), Number::Integer(9), Number::Float(1.5), Number::Float(1e300)] {
            let reason = integer(bad, 1, 8).expect_err("out of range");
            assert!(reason.contains("from 1 to 8"), "{reason}");
        }
        assert_eq!(real(Number::Integer(2), 0.001, 10.0, "ms"), Ok(2.0));
        for bad in [Number::Float(f64::NAN), Number::Float(f64::INFINITY), Number::Float(1e-12), Number::Float(11.0)] {
            assert!(real(bad, 0.001, 10.0, "ms").is_err());
        }
    }
}
