// The pointwise step of the quotient polynomial h(X) = (A(X)·B(X) - C(X)) / Z(X): over the coset
// where Z is the constant Z(g) = g^n - 1, h's evaluations are (a·b - c)·Z(g)^-1, element by
// element. The NTTs around it are in ntt/.

#include "ff/fr.cuh"

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)

// a[i] <- (a[i] * b[i] - c[i]) * z_inv[0].
extern "C" __global__ void fr_h_pointwise(fr_t *a, const fr_t *b, const fr_t *c, u32 n,
                                          const fr_t *z_inv) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    a[i] = fr_mul(fr_sub(fr_mul(a[i], b[i]), c[i]), z_inv[0]);
}

#endif
