//! GPUs, and every call into the CUDA driver: discovery ([`discover`]: a machine without the
//! driver library, without a GPU, or with a driver that refuses to start is not an error, the
//! caller proves on the CPU), our kernels compiled by NVRTC ([`kernels`]), and [`GpuBackend`],
//! the groth16 [`Backend`](crate::groth16::Backend) on one device: its context and stream,
//! buffers and launches (`ntt`, `msm`), the parameter bases kept resident between proofs and the
//! device memory every call needs (`resident`), and random points made on the device for
//! benchmarks (`points`). [`select`] picks the backends the prover slots
//! use. No other module touches cudarc.

mod backend;
mod device;
pub mod kernels;
mod msm;
mod ntt;
mod points;
mod queries;
mod registered;
mod resident;
mod select;
mod spmv;
mod staging;

pub use backend::GpuBackend;
pub use device::{discover, Gpu, GpuInfo};
pub use msm::MsmShape;
pub use select::{select, BackendChoice, Provers};
