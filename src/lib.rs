//! cuzk-appliance: a Groth16 proving appliance for Filecoin storage providers.
//!
//! The pipeline, folder by folder:
//! - [`api`]: the REST API, the only module that knows HTTP; [`jobs`]: the durable job store.
//! - [`engine`]: runs jobs: the queue, a job's partitions through the memory gate and the
//!   prover slots, the ledger, parameter sets and PCEs in memory.
//! - [`memory`]: the budget, and the reservations and holds every large buffer is taken under.
//! - [`circuits`]: Filecoin proof kinds; inputs as Curio holds them -> one circuit per partition,
//!   partition proofs -> the bytes filecoin-proofs returns (verified before they leave).
//! - [`synth`]: circuit -> [`synth::SynthesizedProof`], the narrow waist every path goes through.
//! - [`pce`]: a circuit kind's recorded R1CS matrices: witness-only synthesis + SpMV, the same
//!   SynthesizedProof faster.
//! - [`srs`]: Groth16 parameter files -> decoded bases.
//! - [`groth16`]: SynthesizedProof + SRS -> proof, behind a [`groth16::Backend`]: the CPU here,
//!   GPUs in [`gpu`] (every CUDA call: devices, our NVRTC-compiled kernels, resident bases).
//! - [`config`], [`metrics`], [`systemd`], [`persist`] (the one way kept files are written).
//! - [`fuzz`]: every parser of outside bytes as one call (the fuzz targets' entry points).
//! - [`cli`]: the `cuzk` command.
//!
//! docs/architecture.md has the bird's-eye view, the layers and the invariants.

pub mod api;
pub mod circuits;
pub mod cli;
pub mod config;
pub mod engine;
pub mod faults;
pub mod fuzz;
pub mod gpu;
pub mod groth16;
pub mod jobs;
pub mod memory;
pub mod metrics;
pub mod pce;
pub mod persist;
pub mod srs;
pub mod synth;
pub mod systemd;
