// The program NVRTC compiles at start-up (src/gpu/kernels.rs): every kernel the prover launches, and
// the benchmarks' point maker.
// Each file below also compiles alone, with the headers it includes.

#include "util/scan.cu"
#include "ntt/ntt.cu"
#include "groth16/h.cu"
#include "groth16/density.cu"
#include "groth16/spmv.cu"
#include "msm/msm.cu"
#include "bench/points.cu"
