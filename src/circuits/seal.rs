//! Sealing a small sector with filecoin-proofs (PC1, PC2, C1): the C1 output that tests and
//! benchmarks prove. Well under a second for 2 KiB; never used on the proving path.

use std::io::Cursor;
use std::path::Path;

use anyhow::{Context, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::{PaddedBytesAmount, RegisteredSealProof, SectorId, UnpaddedBytesAmount};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::prover_id_from_miner;

/// Seals a sector of random data under `workdir` and returns its C1 output. `seed` fixes the
/// data, ticket and interactive seed.
pub fn seal_sector(
    proof: RegisteredSealProof,
    miner_id: u64,
    sector_number: u64,
    seed: u64,
    workdir: &Path,
) -> Result<SealCommitPhase1Output> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let sector_size = u64::from(proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size));
    let data: Vec<u8> = (0..u64::from(unpadded)).map(|_| rng.gen()).collect();

    let cache = workdir.join("cache");
    std::fs::create_dir_all(&cache)?;
    let staged = workdir.join("staged");
    let sealed = workdir.join("sealed");
    let mut staged_bytes = Cursor::new(Vec::new());
    let (piece, _) = add_piece(proof, Cursor::new(&data), &mut staged_bytes, unpadded, &[])
        .context("add_piece")?;
    std::fs::write(&staged, staged_bytes.into_inner())?;
    std::fs::write(&sealed, [])?;

    let prover_id = prover_id_from_miner(miner_id);
    let sector_id = SectorId::from(sector_number);
    let mut ticket: [u8; 32] = rng.gen();
    ticket[31] &= 0x3f;
    let mut interactive_seed: [u8; 32] = rng.gen();
    interactive_seed[31] &= 0x3f;

    let pieces = [piece];
    let pc1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )
    .context("seal_pre_commit_phase1")?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    seal_commit_phase1(
        &cache,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        interactive_seed,
        pc2,
        &pieces,
    )
    .context("seal_commit_phase1")
}
