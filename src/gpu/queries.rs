//! The witness's queries in one device call: the assignment (inputs and aux values) crosses
//! once; L sums over the aux values as they are, and A's and B's scalars are gathered from them
//! on the device by their densities (kernels/groth16/density.cu) instead of being gathered on the
//! host and sent again; B's serve B in G2 too. With h in the same call, a, b and c cross beside
//! the witness's MSMs, or, for a compact proof, only the compact witness crosses and a, b and c
//! are computed from the PCE on the device (src/gpu/spmv.rs).

use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use blstrs::{G1Projective, G2Projective};
use cudarc::driver::{CudaEvent, CudaSlice, CudaViewMut};

use super::backend::{launch, GpuBackend, GpuError, Lane};
use super::kernels::Kernel;
use super::msm::{msm_working_bytes, CallBases, DeviceScalars, GpuCurve};
use super::ntt::{h_label, h_working_bytes, Staged, H_SLACK_BYTES};
use super::resident::BasesKey;
use super::spmv::{CompactParts, DevicePce};
use crate::groth16::msm::MsmStats;
use crate::groth16::{Assignment, Aux, G1Query, G1Sums, G2Sum, QuerySum, WitnessSums};
use crate::pce::Pce;
use crate::srs::Srs;
use crate::synth::{Density, Scalars};

/// a, b and c as a device call gets them.
pub(super) enum Evaluations<'a> {
    /// Computed on the host: they cross.
    Host([Scalars; 3]),
    /// To compute on the device from the PCE (the assignment's aux values are then its
    /// compact witness), the rows checked.
    Pce(&'a Pce),
}

/// What the copy stream's thread makes ready: a, b, c uploaded, or computed from a PCE.
enum Source<'a> {
    Host([Scalars; 3]),
    Pce {
        pce: DevicePce,
        parts: &'a mut CompactParts,
        unsatisfied: &'a mut CudaSlice<u32>,
    },
}

impl GpuBackend {
    /// L, A and B in G1 over `w`: the assignment uploaded, then [`GpuBackend::witness_kernels`].
    pub(super) fn witness_msms_on_device(
        &self,
        srs: &Srs,
        w: Assignment<'_>,
    ) -> Result<WitnessSums, GpuError> {
        check_assignment(srs, &w)?;
        let _busy = self.occupy();
        let start = Instant::now();
        self.room_for_call(witness_working_bytes(&w, false), None)?;
        let mut on_device = self.assignment_buffers(&w)?;
        self.copy.join(&self.stream)?;
        let uploaded = self.upload_assignment(&w, &mut on_device)?;
        self.stream.wait(&uploaded)?;
        let clock = self.record(assignment_label(&w), start, assignment_bytes(&w))?;
        let mut work = self.witness_bases(srs, &w, false)?;
        work.side_by_side = self.spare_bytes()?
            >= witness_working_bytes(&w, false) + witness_side_by_side_bytes(&w, false);
        let ready = [self.stream.record_event(None)?];
        let (witness, _) = self.witness_kernels(&w, on_device, work, &ready, start, clock)?;
        Ok(witness)
    }

    /// Every G1 sum of a proof, and with `with_b_g2` B in G2: h from a, b and c into its MSM
    /// over H, and the witness's queries. A thread of its own moves a, b and c, then the
    /// assignment, across on the copy stream; the compute stream transforms each vector as it
    /// arrives and sums h over H, and once the assignment is there the witness's MSMs run on
    /// the side streams ([`GpuBackend::witness_kernels`]) beside them.
    pub(super) fn g1_on_device(
        &self,
        srs: &Srs,
        abc: Evaluations<'_>,
        w: Assignment<'_>,
        with_b_g2: bool,
    ) -> Result<G1Sums, GpuError> {
        check_assignment(srs, &w)?;
        let (_, b_len) = w.query_lengths();
        if with_b_g2 && srs.b_g2.len() < b_len {
            return Err(GpuError::Shape(format!(
                "{} bases for the b_g2 query's {b_len} scalars",
                srs.b_g2.len()
            )));
        }
        let rows = match &abc {
            Evaluations::Host(v) => v[0].len(),
            Evaluations::Pce(pce) => pce.shape().constraints,
        };
        let log_n = Self::h_domain(rows)?;
        let n = 1usize << log_n;
        if !Self::h_in_one_call(srs, log_n) {
            // No h to speak of, or bases that do not fit it: the parts apart say which.
            let start = Instant::now();
            let Evaluations::Host([a, b, c]) = abc else {
                return Err(GpuError::Shape(format!(
                    "{} H bases for a domain of {n}: a, b and c are not computed on the device",
                    srs.h.len()
                )));
            };
            let (h, _, h_took) =
                self.h_msm_on_device(&srs.h, Some((srs.id.into(), "h")), a, b, c)?;
            let msm_h_took = start.elapsed().saturating_sub(h_took);
            let witness = self.witness_msms_on_device(srs, w)?;
            let b_g2 = if with_b_g2 {
                let clock = Instant::now();
                let key = Some((srs.id.into(), B_G2));
                let (sum, _) = self.msm_on_device(&srs.b_g2, key, &w.b_scalars())?;
                Some(G2Sum {
                    sum,
                    took: clock.elapsed(),
                })
            } else {
                None
            };
            return Ok(G1Sums {
                h,
                h_took,
                msm_h_took,
                witness,
                b_g2,
            });
        }
        let _busy = self.occupy();
        // Milestones of the call (CUZK_LOG=debug), in ms from here.
        let call = Instant::now();
        let ms = move || call.elapsed().as_secs_f64() * 1e3;
        let working = h_working_bytes(n)
            + msm_working_bytes::<G1Projective>(n - 1, true)
            + witness_working_bytes(&w, with_b_g2);
        let h_key = Some((srs.id.into(), G1Query::H.name()));
        let h_bases = self.call_bases::<G1Projective>(&srs.h, n - 1, h_key, working)?;
        let h_table = self.window_table::<G1Projective>(h_key, &h_bases, n - 1)?;
        let plan = self.h_plan(log_n)?;
        let assignment = self.assignment_buffers(&w)?;
        let mut vectors = Vec::with_capacity(3);
        for _ in 0..3 {
            vectors.push(self.device_for(rows * 8, n * 8)?);
        }
        let vectors: [CudaSlice<u32>; 3] = vectors.try_into().expect("three vectors");
        let bytes = (3 * rows * 32) as u64;
        // A compact proof's device parts: its PCE, its witness's buffers, the row check.
        let (mut parts, mut unsatisfied) = (None, None);
        let source = match abc {
            Evaluations::Host(abc) => Source::Host(abc),
            Evaluations::Pce(pce) => {
                let Aux::Compact(witness) = w.aux else {
                    return Err(GpuError::Shape(
                        "a PCE's evaluations need a compact witness".into(),
                    ));
                };
                let pce = self.pce_on_device(pce)?;
                let parts = parts.insert(self.compact_parts(witness)?);
                let unsatisfied = unsatisfied.insert(self.stream.alloc_zeros::<u32>(1)?);
                Source::Pce {
                    pce,
                    parts,
                    unsatisfied,
                }
            }
        };
        // Every upload may start now: its buffer exists.
        self.copy.join(&self.stream)?;
        tracing::debug!(ms = ms(), "g1 sums: buffers ready");
        std::thread::scope(|scope| {
            let (assignment_tx, assignment_rx) = channel();
            let (vector_tx, vector_rx) = channel();
            let uploads = scope.spawn(move || {
                self.upload_beside(&w, assignment, source, vectors, assignment_tx, vector_tx)
            });
            let sums = (|| {
                // The witness's bases before h's work is queued: the side streams then wait for
                // nothing else of the compute stream's.
                let mut work = self.witness_bases(srs, &w, with_b_g2)?;
                let bases_ready = self.stream.record_event(None)?;
                // The assignment crosses first: the witness's MSMs, on the side streams from a
                // thread of their own, run while a, b and c cross (the device would otherwise
                // wait on them) and beside h's kernels, and are done or nearly so before the H
                // MSM, the stage that bounds the call, begins.
                let Arrival {
                    event,
                    buf: on_device,
                } = assignment_rx.recv().map_err(|_| uploads_stopped())?;
                tracing::debug!(ms = ms(), "g1 sums: assignment staged");
                let room = WitnessRoom::new(self.spare_bytes()?, n, &w, with_b_g2);
                work.side_by_side = room.side_by_side;
                let witness = scope.spawn(move || {
                    self.stream.context().bind_to_thread()?;
                    let ready = [bases_ready, event];
                    let clock = Instant::now();
                    self.witness_kernels(&w, on_device, work, &ready, clock, clock)
                });
                let witness_done = |job: std::thread::ScopedJoinHandle<'_, _>| {
                    job.join().expect("the witness's MSMs do not panic")
                };
                let (mut witness, mut early) = (Some(witness), None);
                if !room.beside_h {
                    early = witness.take().map(witness_done).transpose()?;
                }
                let h_start = Instant::now();
                let mut transformed = Vec::with_capacity(3);
                for _ in 0..3 {
                    let Arrival { event, buf: mut v } =
                        vector_rx.recv().map_err(|_| uploads_stopped())?;
                    self.stream.wait(&event)?;
                    self.h_transform(&mut v, &plan)?;
                    transformed.push(v);
                }
                let h = self.h_quotient(transformed.try_into().expect("three"), &plan)?;
                tracing::debug!(ms = ms(), "g1 sums: h queued");
                if !room.beside_h_msm && early.is_none() {
                    early = witness.take().map(witness_done).transpose()?;
                }
                self.record(h_label(log_n), h_start, bytes)?;
                self.stream.synchronize()?;
                let h_took = h_start.elapsed();
                tracing::debug!(ms = ms(), ?room, "g1 sums: h done");
                let clock = Instant::now();
                let (h_sum, _) = self.msm_of_h(&h_bases, h_table.as_ref(), &h, log_n)?;
                let msm_h_took = clock.elapsed();
                tracing::debug!(ms = ms(), "g1 sums: H MSM done");
                let (witness, b_g2) = match (early, witness) {
                    (Some(done), _) => done,
                    (None, Some(job)) => witness_done(job)?,
                    (None, None) => unreachable!("the witness's MSMs are joined once"),
                };
                tracing::debug!(ms = ms(), "g1 sums: witness joined");
                Ok::<_, GpuError>(G1Sums {
                    h: h_sum,
                    h_took,
                    msm_h_took,
                    witness,
                    b_g2,
                })
            })();
            // A failed transfer is the cause of whatever stopped the sums.
            let uploaded = uploads.join().expect("the uploads do not panic");
            tracing::debug!(ms = ms(), "g1 sums: uploads joined (host vectors freed)");
            if uploaded.is_err() || sums.is_err() {
                // Buffers still waiting in the channels are freed when this scope ends, and
                // their transfers may still be landing: the memory must not go to the next
                // call's buffers before they have.
                if let Err(e) = self.copy.synchronize() {
                    tracing::warn!(error = %e, "copy stream after a failed call");
                }
            }
            uploaded.and(sums)
        })
        .and_then(|sums| match unsatisfied {
            Some(count) => match self.unsatisfied_rows(&count)? {
                0 => Ok(sums),
                rows => Err(GpuError::Unsatisfied(rows)),
            },
            None => Ok(sums),
        })
    }

    /// The row check's count, once the copy stream has run it.
    fn unsatisfied_rows(&self, count: &CudaSlice<u32>) -> Result<usize, GpuError> {
        let mut host = [0u32];
        self.copy.memcpy_dtoh(count, &mut host)?;
        self.copy.synchronize()?;
        Ok(host[0] as usize)
    }

    /// The assignment, then a, b and c, into their device buffers on the copy stream (which
    /// already waits for their allocation); each buffer is sent on with the event that fires
    /// when its transfer is done. Once all are staged, the host vectors are freed here, off
    /// the caller's path. From a PCE, the compact witness crosses and is expanded, and a, b
    /// and c are computed and checked, all on the copy stream, before anything is sent (the
    /// compute stream transforms the vectors in place). Stops early, without error, when a
    /// receiver has gone.
    fn upload_beside(
        &self,
        w: &Assignment<'_>,
        mut assignment: OnDevice,
        source: Source<'_>,
        mut vectors: [CudaSlice<u32>; 3],
        assignment_tx: Sender<Arrival<OnDevice>>,
        vector_tx: Sender<Arrival<CudaSlice<u32>>>,
    ) -> Result<(), GpuError> {
        self.stream.context().bind_to_thread()?;
        let (event, host) = match source {
            Source::Host(abc) => (self.upload_assignment(w, &mut assignment)?, Some(abc)),
            Source::Pce {
                pce,
                parts,
                unsatisfied,
            } => {
                let Aux::Compact(witness) = w.aux else {
                    unreachable!("g1_on_device pairs a PCE with a compact witness")
                };
                let lane = Lane {
                    gpu: self,
                    stream: &self.copy,
                };
                self.upload_on_copy(w.inputs, &mut assignment.inputs)?;
                self.expand_on(lane, witness, parts, &mut assignment.aux)?;
                self.evaluate_on(
                    lane,
                    &pce,
                    &assignment.inputs,
                    &assignment.aux,
                    &mut vectors,
                    unsatisfied,
                )?;
                (self.copy.record_event(None)?, None)
            }
        };
        let arrival = Arrival {
            event,
            buf: assignment,
        };
        if assignment_tx.send(arrival).is_err() {
            return Ok(());
        }
        let Some(abc) = host else {
            // Computed in place with the assignment: each ready once it is.
            for buf in vectors {
                let event = self.copy.record_event(None)?;
                if vector_tx.send(Arrival { event, buf }).is_err() {
                    break;
                }
            }
            return Ok(());
        };
        // The host vectors are kept until every upload is staged: unmapping pages while other
        // threads fill the staging halves halved their speed.
        let mut staged = Vec::with_capacity(3);
        let mut read = None;
        for (mut buf, host) in vectors.into_iter().zip(abc) {
            self.upload_on_copy(&host, &mut buf)?;
            staged.push(host);
            let event = self.copy.record_event(None)?;
            read = Some(self.copy.record_event(None)?);
            if vector_tx.send(Arrival { event, buf }).is_err() {
                break;
            }
        }
        Staged {
            vectors: staged,
            read,
        }
        .free_beside(|| ());
        Ok(())
    }

    /// Device buffers for the assignment's aux values and inputs.
    fn assignment_buffers(&self, w: &Assignment<'_>) -> Result<OnDevice, GpuError> {
        let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
        Ok(OnDevice {
            aux: self.device_for(n_aux * 8, n_aux * 8)?,
            inputs: self.device_for(n_in * 8, n_in * 8)?,
        })
    }

    /// The assignment into `to` on the copy stream (which already waits for `to`'s
    /// allocation); the event fires when it is there.
    fn upload_assignment(
        &self,
        w: &Assignment<'_>,
        to: &mut OnDevice,
    ) -> Result<CudaEvent, GpuError> {
        self.upload_on_copy(&w.aux.values(), &mut to.aux)?;
        self.upload_on_copy(w.inputs, &mut to.inputs)?;
        Ok(self.copy.record_event(None)?)
    }

    /// The device copies of the witness's bases, L, A, B in G1 and with `with_b_g2` B in G2
    /// (resident, or uploaded on the compute stream): made before the MSMs begin, so that the
    /// side streams need only wait for the compute stream once.
    fn witness_bases(
        &self,
        srs: &Srs,
        w: &Assignment<'_>,
        with_b_g2: bool,
    ) -> Result<WitnessWork, GpuError> {
        let (a_len, b_len) = w.query_lengths();
        let g1 = |query: G1Query, len: usize| {
            self.bases_for::<G1Projective>(query.bases(srs), len, (srs.id.into(), query.name()))
        };
        Ok(WitnessWork {
            l: g1(G1Query::L, w.aux.len())?,
            a: g1(G1Query::A, a_len)?,
            b_g1: g1(G1Query::BG1, b_len)?,
            b_g2: match with_b_g2 {
                true => self.bases_for::<G2Projective>(&srs.b_g2, b_len, (srs.id.into(), B_G2))?,
                false => None,
            },
            with_b_g2,
            side_by_side: false,
        })
    }

    /// `bases[..len]` on the device, kept resident under `key`; none for no scalars. Room for
    /// the working memory was made with the call's.
    fn bases_for<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        len: usize,
        key: BasesKey,
    ) -> Result<Option<CallBases>, GpuError> {
        if len == 0 {
            return Ok(None);
        }
        self.call_bases::<C>(bases, len, Some(key), 0).map(Some)
    }

    /// L, A and B in G1 over the assignment on the device, and B in G2 where its bases are
    /// given, on the side streams once the `ready` events (behind the assignment's arrival and
    /// the bases) have fired: A's and B's scalars are gathered by density on the first, then
    /// each query sums on a stream of its own from a thread of its own (an MSM's small stages
    /// wait on the host and leave most of the device idle) when `work` says side by side (the
    /// caller has found room for all of them at once without letting resident bases go), else
    /// one after another on the first. Returns once every sum is back, so every buffer here is free to
    /// go. The caller holds the device and has made room for them one at a time.
    fn witness_kernels(
        &self,
        w: &Assignment<'_>,
        on_device: OnDevice,
        work: WitnessWork,
        ready: &[CudaEvent],
        start: Instant,
        clock: Instant,
    ) -> Result<(WitnessSums, Option<G2Sum>), GpuError> {
        let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
        let (a_len, b_len) = w.query_lengths();
        let [l_lane, a_lane, b_lane, g2_lane] = self
            .side
            .each_ref()
            .map(|stream| Lane { gpu: self, stream });
        for lane in [&l_lane, &a_lane, &b_lane, &g2_lane] {
            for event in ready {
                lane.stream.wait(event)?;
            }
        }
        let OnDevice { aux, inputs } = &on_device;
        let gathered = Instant::now();
        // A's and B's scalars gathered on the first lane; a failure there waits for what that
        // lane has queued before the assignment it reads is freed.
        let scalars = (|| {
            let mut a = l_lane.stream.alloc_zeros::<u32>(a_len.max(1) * 8)?;
            if n_in > 0 {
                l_lane
                    .stream
                    .memcpy_dtod(inputs, &mut a.slice_mut(0..n_in * 8))?;
            }
            l_lane.gather(aux, w.a_aux_density, &mut a.slice_mut(n_in * 8..))?;
            let mut b = l_lane.stream.alloc_zeros::<u32>(b_len.max(1) * 8)?;
            let b_in = w.b_input_density.count();
            l_lane.gather(inputs, w.b_input_density, &mut b.slice_mut(0..b_in * 8))?;
            l_lane.gather(aux, w.b_aux_density, &mut b.slice_mut(b_in * 8..))?;
            let scalars_there = l_lane.stream.record_event(None)?;
            for lane in [&a_lane, &b_lane, &g2_lane] {
                lane.stream.wait(&scalars_there)?;
            }
            Ok::<_, GpuError>((a, b))
        })();
        let (a, b) = match scalars {
            Ok(ab) => ab,
            Err(e) => {
                if let Err(sync) = l_lane.stream.synchronize() {
                    tracing::warn!(error = %sync, "a witness lane after a failed gather");
                }
                return Err(e);
            }
        };
        // Each sum's time runs from `since`: the gather beside each other, the sum's own start
        // one after another.
        let sum_l =
            |lane: Lane<'_>| lane.query_sum::<G1Projective>(&work.l, aux, n_aux, "l", start, clock);
        let sum_a = |lane: Lane<'_>, since: Instant| {
            lane.query_sum::<G1Projective>(&work.a, &a, a_len, "a", since, since)
        };
        let sum_b = |lane: Lane<'_>, since: Instant| {
            lane.query_sum::<G1Projective>(&work.b_g1, &b, b_len, "b_g1", since, since)
        };
        let sum_g2 = |lane: Lane<'_>, since: Instant| {
            lane.query_sum::<G2Projective>(&work.b_g2, &b, b_len, B_G2, since, since)
        };
        let sums = if work.side_by_side {
            let on_thread = || self.stream.context().bind_to_thread();
            std::thread::scope(|scope| {
                let a_sum = scope.spawn(|| {
                    on_thread()?;
                    sum_a(a_lane, gathered)
                });
                let b_sum = scope.spawn(|| {
                    on_thread()?;
                    sum_b(b_lane, gathered)
                });
                let g2_sum = work.with_b_g2.then(|| {
                    scope.spawn(|| {
                        on_thread()?;
                        sum_g2(g2_lane, gathered)
                    })
                });
                let l = sum_l(l_lane);
                let (a, b_g1) = (joined(a_sum), joined(b_sum));
                let b_g2 = g2_sum.map(joined).transpose();
                (l, a, b_g1, b_g2)
            })
        } else {
            let l = sum_l(l_lane);
            let a = sum_a(l_lane, Instant::now());
            let b_g1 = sum_b(l_lane, Instant::now());
            let b_g2 = work
                .with_b_g2
                .then(|| sum_g2(l_lane, Instant::now()))
                .transpose();
            (l, a, b_g1, b_g2)
        };
        // Every lane has run its work (an MSM ends by reading its sums back); after a failure,
        // what one left queued must still finish before the buffers below are freed.
        for lane in [&l_lane, &a_lane, &b_lane, &g2_lane] {
            lane.stream.synchronize()?;
        }
        let (l, a_sum, b_g1, b_g2) = sums;
        let witness = WitnessSums {
            l: l?.into(),
            a: a_sum?.into(),
            b_g1: b_g1?.into(),
        };
        let b_g2 = b_g2?.map(|(sum, _, took): (G2Projective, MsmStats, _)| G2Sum { sum, took });
        drop((a, b, on_device));
        Ok((witness, b_g2))
    }
}

impl Lane<'_> {
    /// Σ scalars[..len]·bases over the query `name` on this lane (the identity for no
    /// scalars), with its time from `since`.
    fn query_sum<C: GpuCurve>(
        &self,
        bases: &Option<CallBases>,
        scalars: &CudaSlice<u32>,
        len: usize,
        name: &str,
        since: Instant,
        clock: Instant,
    ) -> Result<(C, MsmStats, Duration), GpuError> {
        let Some(bases) = bases.as_ref().filter(|_| len > 0) else {
            return Ok((C::identity(), MsmStats::default(), since.elapsed()));
        };
        let label = format!("msm_{} {name} ({len} points)", C::NAME);
        let scalars = DeviceScalars {
            buf: scalars,
            positions: len,
            points: len,
            rev_bits: 0,
        };
        let (sum, stats) = self.msm_kernels::<C>(bases, None, scalars, &label, clock)?;
        Ok((sum, stats, since.elapsed()))
    }

    /// dst[..density.count()] <- the scalars of `src` whose bit is set in `density`, in order.
    fn gather(
        &self,
        src: &CudaSlice<u32>,
        density: &Density,
        dst: &mut CudaViewMut<'_, u32>,
    ) -> Result<(), GpuError> {
        let len = density.len();
        if density.count() == 0 {
            return Ok(());
        }
        let len32 =
            u32::try_from(len).map_err(|_| GpuError::Shape(format!("a density of {len} bits")))?;
        let words = len.div_ceil(32);
        let bits = self.stream.clone_htod(&density_words(density)[..words])?;
        // SAFETY: density_popcount writes every word's count.
        let mut before = unsafe { self.stream.alloc::<u32>(words) }?;
        let words32 = words as u32;
        launch!(self, Kernel::DensityPopcount, words, 256; &bits, &words32, &mut before);
        self.scan(&mut before, words)?;
        launch!(self, Kernel::DensityGather, len, 256; src, &len32, &bits, &before, &mut *dst);
        Ok(())
    }
}

/// What a thread of one of the witness's MSMs returned.
fn joined<T>(job: std::thread::ScopedJoinHandle<'_, T>) -> T {
    job.join().expect("an MSM's thread does not panic")
}

/// The witness's MSMs in one call: their bases on the device ([`GpuBackend::witness_bases`]),
/// whether B in G2 is one of them, and whether they run side by side.
struct WitnessWork {
    l: Option<CallBases>,
    a: Option<CallBases>,
    b_g1: Option<CallBases>,
    b_g2: Option<CallBases>,
    with_b_g2: bool,
    side_by_side: bool,
}

impl From<(G1Projective, MsmStats, Duration)> for QuerySum {
    fn from((sum, stats, took): (G1Projective, MsmStats, Duration)) -> QuerySum {
        QuerySum { sum, stats, took }
    }
}

/// The key of B's G2 bases among the resident ones.
pub(super) const B_G2: &str = "b_g2";

/// A buffer whose transfer the copy stream has queued, and the event that fires when it is
/// done.
struct Arrival<T> {
    event: CudaEvent,
    buf: T,
}

fn uploads_stopped() -> GpuError {
    GpuError::Shape("the uploads stopped before their buffer was sent".into())
}

/// The assignment's aux values and inputs on the device.
struct OnDevice {
    aux: CudaSlice<u32>,
    inputs: CudaSlice<u32>,
}

/// Densities as long as what they select from, and bases for every query's scalars.
fn check_assignment(srs: &Srs, w: &Assignment<'_>) -> Result<(), GpuError> {
    let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
    let (a_len, b_len) = w.query_lengths();
    for (what, density, of) in [
        ("A's aux density", w.a_aux_density, n_aux),
        ("B's aux density", w.b_aux_density, n_aux),
        ("B's input density", w.b_input_density, n_in),
    ] {
        if density.len() != of {
            return Err(GpuError::Shape(format!(
                "{what} has {} bits for {of} values",
                density.len()
            )));
        }
    }
    for (query, len) in [
        (G1Query::L, n_aux),
        (G1Query::A, a_len),
        (G1Query::BG1, b_len),
    ] {
        if query.bases(srs).len() < len {
            return Err(GpuError::Shape(format!(
                "{} bases for the {} query's {len} scalars",
                query.bases(srs).len(),
                query.name()
            )));
        }
    }
    Ok(())
}

/// Where the witness's MSMs run in [`GpuBackend::g1_on_device`], from the device memory still
/// spare once the call's buffers (a, b, c, the assignment, h's plan) are there.
#[derive(Debug, PartialEq, Eq)]
struct WitnessRoom {
    /// Beside h's kernels: room for h's slack and the witness's working memory; else they run
    /// before h.
    beside_h: bool,
    /// Beside the H MSM as well: room for its working memory too; else they are joined before
    /// it.
    beside_h_msm: bool,
    /// Side by side, each on a stream of its own, beside whatever else runs then; else one
    /// after another.
    side_by_side: bool,
}

impl WitnessRoom {
    fn new(spare: usize, n: usize, w: &Assignment<'_>, with_b_g2: bool) -> WitnessRoom {
        let witness = witness_working_bytes(w, with_b_g2);
        let h_msm = msm_working_bytes::<G1Projective>(n - 1, true);
        let beside_h = spare >= H_SLACK_BYTES + witness;
        let beside_h_msm = spare >= H_SLACK_BYTES + h_msm + witness;
        let others = match (beside_h, beside_h_msm) {
            (_, true) => H_SLACK_BYTES + h_msm,
            (true, false) => H_SLACK_BYTES,
            (false, _) => 0,
        };
        WitnessRoom {
            beside_h,
            beside_h_msm,
            side_by_side: spare >= others + witness + witness_side_by_side_bytes(w, with_b_g2),
        }
    }
}

/// Device bytes of the witness's queries run one after another: the assignment, A's and B's
/// gathered scalars, and the largest MSM's own memory (B in G2's too with `with_b_g2`).
fn witness_working_bytes(w: &Assignment<'_>, with_b_g2: bool) -> usize {
    let (n_in, n_aux) = (w.inputs.len(), w.aux.len());
    let (a_len, b_len) = w.query_lengths();
    let msms = witness_msm_bytes(w, with_b_g2);
    (n_in + n_aux + a_len + b_len) * 32 + msms.into_iter().max().unwrap_or(0)
}

/// Device bytes the witness's MSMs need beyond [`witness_working_bytes`] to run side by side.
fn witness_side_by_side_bytes(w: &Assignment<'_>, with_b_g2: bool) -> usize {
    let msms = witness_msm_bytes(w, with_b_g2);
    msms.iter().sum::<usize>() - msms.iter().max().unwrap_or(&0)
}

/// The working memory of each of the witness's MSMs: L, A, B in G1, B in G2 (none without
/// `with_b_g2`).
fn witness_msm_bytes(w: &Assignment<'_>, with_b_g2: bool) -> [usize; 4] {
    let (a_len, b_len) = w.query_lengths();
    [
        msm_working_bytes::<G1Projective>(w.aux.len(), true),
        msm_working_bytes::<G1Projective>(a_len, true),
        msm_working_bytes::<G1Projective>(b_len, true),
        match with_b_g2 {
            true => msm_working_bytes::<G2Projective>(b_len, true),
            false => 0,
        },
    ]
}

fn assignment_bytes(w: &Assignment<'_>) -> u64 {
    ((w.inputs.len() + w.aux.len()) * 32) as u64
}

fn assignment_label(w: &Assignment<'_>) -> String {
    format!(
        "assignment.upload ({} aux, {} inputs)",
        w.aux.len(),
        w.inputs.len()
    )
}

/// A density's bits as 32-bit words: bit i is bit i % 32 of word i / 32 (the u64 words split,
/// low half first).
fn density_words(density: &Density) -> Vec<u32> {
    density
        .words()
        .iter()
        .flat_map(|&w| [w as u32, (w >> 32) as u32])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_words_put_bit_i_at_word_i_over_32() {
        let mut d = Density::new();
        for i in 0..200 {
            d.push();
            if i % 7 == 3 || i == 63 || i == 64 {
                d.set(i);
            }
        }
        let w = density_words(&d);
        for i in 0..200 {
            assert_eq!((w[i / 32] >> (i % 32)) & 1 == 1, d.get(i), "bit {i}");
        }
    }

    #[test]
    fn witness_room_steps_down_from_beside_everything_to_before_h() {
        let (inputs, aux) = (
            vec![blstrs::Scalar::from(1u64); 2],
            vec![blstrs::Scalar::from(1u64); 1000],
        );
        let (full_in, full_aux) = (Density::full(2), Density::full(1000));
        let w = Assignment {
            inputs: &inputs,
            aux: aux[..].into(),
            a_aux_density: &full_aux,
            b_input_density: &full_in,
            b_aux_density: &full_aux,
        };
        let n = 1 << 24;
        let witness = witness_working_bytes(&w, true);
        let apart = witness_side_by_side_bytes(&w, true);
        let h_msm = msm_working_bytes::<G1Projective>(n - 1, true);
        let room = |spare| WitnessRoom::new(spare, n, &w, true);
        let all = H_SLACK_BYTES + h_msm + witness;
        assert!(
            apart < h_msm,
            "the witness's MSMs apart fit where the H MSM's memory is"
        );
        assert_eq!(
            room(all + apart),
            WitnessRoom {
                beside_h: true,
                beside_h_msm: true,
                side_by_side: true
            }
        );
        assert_eq!(
            room(all + apart - 1),
            WitnessRoom {
                beside_h: true,
                beside_h_msm: true,
                side_by_side: false
            }
        );
        assert_eq!(
            room(all - 1),
            WitnessRoom {
                beside_h: true,
                beside_h_msm: false,
                side_by_side: true
            }
        );
        assert_eq!(
            room(H_SLACK_BYTES + witness),
            WitnessRoom {
                beside_h: true,
                beside_h_msm: false,
                side_by_side: false
            }
        );
        let before_h = room(H_SLACK_BYTES + witness - 1);
        assert!(!before_h.beside_h && !before_h.beside_h_msm);
        assert!(!room(witness + apart - 1).side_by_side);
        assert_eq!(
            room(0),
            WitnessRoom {
                beside_h: false,
                beside_h_msm: false,
                side_by_side: false
            }
        );
    }
}
