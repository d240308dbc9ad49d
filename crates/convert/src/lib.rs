//! nandlab-convert: the numeric conversions nandlab makes in many places, each with its rounding
//! said once here instead of an `as` at every call site: a count, size or time in nanoseconds as
//! an `f64` ([`f64_of`], [`ratio`]), and a computed `f64` back to an integer ([`saturating`]).
//! Each does exactly what `as` does, so a result computed through them is bit-identical to one
//! computed with the cast; the pedantic cast lints are on in this crate and expected at each cast.

#![warn(clippy::cast_possible_truncation, clippy::cast_precision_loss, clippy::cast_sign_loss)]

/// An integer nandlab turns into an `f64`: a count, a length, a byte size, a time in ns or a
/// number as a file wrote it.
pub trait Integer: Copy {
    /// The nearest `f64` (ties to even).
    fn nearest_f64(self) -> f64;
}

macro_rules! integer {
    ($($type:ty),*) => {$(
        impl Integer for $type {
            #[expect(clippy::cast_precision_loss, reason = "rounding to the nearest f64 is the contract")]
            fn nearest_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
integer!(u64, usize, u128, i64);

macro_rules! exact {
    ($($type:ty),*) => {$(
        impl Integer for $type {
            fn nearest_f64(self) -> f64 {
                f64::from(self)
            }
        }
    )*};
}
exact!(u32, u16, u8);

/// `n` as the nearest `f64`: exact up to 2^53, which nandlab's counts, byte sizes (8 PiB) and
/// times (2^53 ns is 104 days) stay below; past it the nearest representable value.
#[must_use]
pub fn f64_of(n: impl Integer) -> f64 {
    n.nearest_f64()
}

/// `part / whole`, each as the nearest `f64` ([`f64_of`]); a zero `whole` gives what the float
/// division gives (infinity, or NaN for 0 / 0), so callers say what a share of nothing is.
#[must_use]
pub fn ratio<T: Integer>(part: T, whole: T) -> f64 {
    f64_of(part) / f64_of(whole)
}

/// An integer a computed `f64` (a rounded size, a share of a count, a time) becomes.
pub trait FromF64 {
    /// `x` rounded toward zero, saturating: NaN and anything below zero give 0, anything past
    /// the type's maximum gives the maximum (what `as` does).
    fn saturating_from(x: f64) -> Self;
}

macro_rules! from_f64 {
    ($($type:ty),*) => {$(
        impl FromF64 for $type {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "saturating toward zero is the contract"
            )]
            fn saturating_from(x: f64) -> Self {
                x as $type
            }
        }
    )*};
}
from_f64!(u64, u32, u16, usize);

/// `x` (normally already `floor`ed, `ceil`ed or `round`ed by the caller) as an integer, toward
/// zero and saturating ([`FromF64::saturating_from`]): NaN and negatives give 0.
#[must_use]
pub fn saturating<T: FromF64>(x: f64) -> T {
    T::saturating_from(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_exact_up_to_2_pow_53_and_nearest_past_it() {
        assert_eq!(f64_of(0_u64), 0.0);
        assert_eq!(f64_of((1_u64 << 53) - 1), 9_007_199_254_740_991.0);
        assert_eq!(f64_of((1_u64 << 53) + 1), 9_007_199_254_740_992.0, "ties to even");
        assert_eq!(f64_of(u64::MAX), 18_446_744_073_709_551_616.0);
        assert_eq!(f64_of(7_usize), 7.0);
        assert_eq!(f64_of(u128::MAX), 3.402_823_669_209_385e38);
    }

    #[test]
    fn a_ratio_of_nothing_is_left_to_the_caller() {
        assert_eq!(ratio(1_u64, 4), 0.25);
        assert_eq!(ratio(3_usize, 2), 1.5);
        assert!(ratio(1_u64, 0).is_infinite());
        assert!(ratio(0_u64, 0).is_nan());
    }

    #[test]
    fn back_to_integers_toward_zero_saturating() {
        assert_eq!(saturating::<u64>(2.9), 2);
        assert_eq!(saturating::<u32>(-0.5), 0);
        assert_eq!(saturating::<u64>(f64::NAN), 0);
        assert_eq!(saturating::<u32>(1e10), u32::MAX);
        assert_eq!(saturating::<usize>(f64::INFINITY), usize::MAX);
        assert_eq!(saturating::<u16>(65_535.9), u16::MAX);
    }
}
