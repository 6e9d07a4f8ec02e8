//! Conversions between cycle counts (`u64`) and simulated times (`f64`) that give exactly
//! what Rust's `as` casts give, for every value, in fewer host instructions. The x86-64
//! baseline converts only signed integers: a `u64` cast compiles to six or seven
//! instructions one way and about fifteen the other (with the saturation Rust defines),
//! while cycle counts stay far below 2^63, where the signed conversion is the same and one
//! instruction (a range test sends other values to the cast itself). The bus's and the DRAM
//! controllers' slot calendars use them: a simulated DRAM miss converts about a dozen times.

/// 2^63, the first value the signed conversions cannot hold.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// `x as f64`.
#[inline(always)]
pub fn to_f64(x: u64) -> f64 {
    match i64::try_from(x) {
        Ok(v) => v as f64,
        Err(_) => cast_to_f64(x),
    }
}

/// `x as u64`: truncated toward zero, 0 for NaN and below 0, `u64::MAX` from 2^64 on.
#[inline(always)]
#[allow(unsafe_code)]
pub fn to_u64(x: f64) -> u64 {
    if (0.0..TWO_63).contains(&x) {
        // SAFETY: `to_int_unchecked` needs a finite value whose truncation fits the target:
        // `x` is in [0, 2^63) (a NaN fails the range test), so its truncation is in
        // [0, 2^63 - 1].
        unsafe { x.to_int_unchecked::<i64>() as u64 }
    } else {
        cast_to_u64(x)
    }
}

// The casts themselves, out of line: inlined, the compiler computes them beside the fast
// conversion and selects, which costs what the fast conversion saves (or recognises the
// selection as the cast itself).

#[cold]
#[inline(never)]
fn cast_to_f64(x: u64) -> f64 {
    x as f64
}

#[cold]
#[inline(never)]
fn cast_to_u64(x: f64) -> u64 {
    x as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both conversions equal the `as` casts on the edges (0, -0, the powers of two around
    /// the signed range and the exactly representable integers, NaN, the infinities,
    /// subnormals, values just below and above each) and on a million random bit patterns
    /// of each type.
    #[test]
    fn the_conversions_are_the_casts() {
        let mut ints: Vec<u64> = vec![0, 1, 2, u64::MAX, u64::MAX - 1];
        for k in [52u32, 53, 54, 62, 63] {
            let p = 1u64 << k;
            ints.extend([p - 1, p, p + 1, p + 2, p.wrapping_mul(3) / 2]);
        }
        let mut floats: Vec<f64> = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            TWO_63,
            -TWO_63,
            2.0 * TWO_63,
            1e300,
        ];
        for x in [TWO_63, 2.0 * TWO_63, 1.0, 2f64.powi(53), 12345.678] {
            // The neighbours of a positive value (`next_down`/`next_up` are newer than the
            // MSRV).
            let (below, above) = (
                f64::from_bits(x.to_bits() - 1),
                f64::from_bits(x.to_bits() + 1),
            );
            floats.extend([below, above, -below]);
        }
        let mut rnd = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..1_000_000 {
            let r = rnd();
            ints.push(r >> (r % 64));
            floats.push(f64::from_bits(r));
            floats.push((r >> 11) as f64 / 3.0);
        }
        for x in ints {
            assert_eq!(to_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
        for x in floats {
            assert_eq!(to_u64(x), x as u64, "{x:e} ({:#x})", x.to_bits());
        }
    }
}
