//! Evaluation domains of BLS12-381's Fr and the number-theoretic transform over them.
//!
//! Radix-2, decimation in time after a bit-reversal permutation. The first stages run block by
//! block inside the cache; the remaining stages stream over the whole vector, split across the
//! rayon pool. One table of forward twiddles per domain size serves both directions (the inverse
//! transform is the forward one with outputs 1..n reversed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Elements per cache block: 2^12 scalars = 128 KiB.
const BLOCK_LOG: u32 = 12;
/// Butterflies per parallel task in the streaming stages.
const TASK: usize = 1 << 12;

/// A multiplicative subgroup of Fr of size 2^log_n, with its twiddle table.
pub struct Domain {
    log_n: u32,
    omega: Scalar,
    /// omega^k for k in 0..n/2.
    twiddles: Vec<Scalar>,
}

#[derive(Debug, thiserror::Error)]
#[error("domain of 2^{log_n} exceeds Fr's two-adicity of 2^{}", Scalar::S)]
pub struct DomainTooLarge {
    pub log_n: u32,
}

impl Domain {
    /// The domain of size 2^log_n, built once per size and shared.
    pub fn get(log_n: u32) -> Result<Arc<Domain>, DomainTooLarge> {
        static CACHE: OnceLock<Mutex<HashMap<u32, Arc<Domain>>>> = OnceLock::new();
        if log_n > Scalar::S {
            return Err(DomainTooLarge { log_n });
        }
        let cache = CACHE.get_or_init(Default::default);
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        Ok(map
            .entry(log_n)
            .or_insert_with(|| Arc::new(Domain::new(log_n)))
            .clone())
    }

    /// The smallest domain holding `len` evaluations.
    pub fn for_len(len: usize) -> Result<Arc<Domain>, DomainTooLarge> {
        Domain::get(len.max(1).next_power_of_two().trailing_zeros())
    }

    fn new(log_n: u32) -> Domain {
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let half = (1usize << log_n) / 2;
        let mut twiddles = vec![Scalar::ZERO; half];
        twiddles
            .par_chunks_mut(TASK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut w = omega.pow_vartime([(c * TASK) as u64]);
                for t in chunk {
                    *t = w;
                    w *= omega;
                }
            });
        Domain {
            log_n,
            omega,
            twiddles,
        }
    }

    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    pub fn log_size(&self) -> u32 {
        self.log_n
    }

    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// In place: coefficients -> evaluations at omega^i.
    pub fn fft(&self, v: &mut [Scalar]) {
        assert_eq!(
            v.len(),
            self.size(),
            "vector length must equal the domain size"
        );
        if self.log_n == 0 {
            return;
        }
        bit_reverse(v, self.log_n);
        let block_log = self.log_n.min(BLOCK_LOG);
        let stride_base = self.log_n;
        v.par_chunks_mut(1 << block_log).for_each(|block| {
            for stage in 0..block_log {
                let half = 1usize << stage;
                let stride = 1usize << (stride_base - stage - 1);
                for group in block.chunks_mut(2 * half) {
                    let (lo, hi) = group.split_at_mut(half);
                    butterflies(lo, hi, &self.twiddles, 0, stride);
                }
            }
        });
        for stage in block_log..self.log_n {
            let half = 1usize << stage;
            let stride = 1usize << (self.log_n - stage - 1);
            v.par_chunks_mut(2 * half).for_each(|group| {
                let (lo, hi) = group.split_at_mut(half);
                lo.par_chunks_mut(TASK)
                    .zip(hi.par_chunks_mut(TASK))
                    .enumerate()
                    .for_each(|(t, (lo, hi))| {
                        butterflies(lo, hi, &self.twiddles, t * TASK, stride)
                    });
            });
        }
    }

    /// In place: evaluations at omega^i -> coefficients, without the 1/n factor.
    pub fn ifft_unscaled(&self, v: &mut [Scalar]) {
        self.fft(v);
        v[1..].reverse();
    }

    /// In place: evaluations at omega^i -> coefficients.
    pub fn ifft(&self, v: &mut [Scalar]) {
        self.ifft_unscaled(v);
        let n_inv = self.size_inverse();
        v.par_iter_mut().for_each(|x| *x *= n_inv);
    }

    pub fn size_inverse(&self) -> Scalar {
        Scalar::from(self.size() as u64)
            .invert()
            .expect("domain size is non-zero in Fr")
    }
}

/// hi[k] *= w^(offset+k)*stride, then (lo, hi) <- (lo + hi, lo - hi).
#[inline]
fn butterflies(
    lo: &mut [Scalar],
    hi: &mut [Scalar],
    twiddles: &[Scalar],
    offset: usize,
    stride: usize,
) {
    for (k, (a, b)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *b * twiddles[(offset + k) * stride];
        *b = *a - t;
        *a += t;
    }
}

/// Multiplies v[i] by scale · g^i, in parallel: used for coset shifts and their inverses.
pub fn scale_by_powers(v: &mut [Scalar], g: Scalar, scale: Scalar) {
    v.par_chunks_mut(TASK).enumerate().for_each(|(c, chunk)| {
        let mut w = scale * g.pow_vartime([(c * TASK) as u64]);
        for x in chunk {
            *x *= w;
            w *= g;
        }
    });
}

fn bit_reverse(v: &mut [Scalar], log_n: u32) {
    let n = v.len();
    let shift = usize::BITS - log_n;
    // Each swap pair (i, rev(i)) with i < rev(i) is touched by exactly one task.
    let ptr = SendPtr(v.as_mut_ptr());
    (0..n).into_par_iter().with_min_len(1 << 14).for_each(|i| {
        let r = i.reverse_bits() >> shift;
        if i < r {
            let p = &ptr;
            // SAFETY: i < r < n, and the pair (i, r) belongs to this index alone.
            unsafe { std::ptr::swap(p.0.add(i), p.0.add(r)) };
        }
    });
}

struct SendPtr(*mut Scalar);
// SAFETY: used only for disjoint swaps in bit_reverse.
unsafe impl Sync for SendPtr {}
unsafe impl Send for SendPtr {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn naive_dft(coeffs: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        let n = coeffs.len();
        (0..n)
            .map(|i| {
                let x = omega.pow_vartime([i as u64]);
                coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
            })
            .collect()
    }

    #[test]
    fn fft_matches_naive_dft_and_ifft_inverts_it() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for log_n in [0u32, 1, 2, 5, 9] {
            let d = Domain::get(log_n).unwrap();
            let coeffs: Vec<Scalar> = (0..d.size()).map(|_| Scalar::random(&mut rng)).collect();
            let mut v = coeffs.clone();
            d.fft(&mut v);
            assert_eq!(v, naive_dft(&coeffs, d.omega()), "log_n = {log_n}");
            d.ifft(&mut v);
            assert_eq!(v, coeffs);
        }
    }

    #[test]
    fn fft_round_trips_across_the_block_boundary() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let d = Domain::get(BLOCK_LOG + 3).unwrap();
        let coeffs: Vec<Scalar> = (0..d.size()).map(|_| Scalar::random(&mut rng)).collect();
        let mut v = coeffs.clone();
        d.fft(&mut v);
        // Spot-check a few evaluations against Horner.
        for i in [0usize, 1, 4097, d.size() - 1] {
            let x = d.omega().pow_vartime([i as u64]);
            let want = coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
            assert_eq!(v[i], want);
        }
        d.ifft(&mut v);
        assert_eq!(v, coeffs);
    }

    #[test]
    fn domain_beyond_two_adicity_is_an_error() {
        assert!(Domain::get(Scalar::S + 1).is_err());
    }
}
