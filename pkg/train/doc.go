// Package train trains ConE and RoConE models on a train queries file: the data loaders,
// negative sampling, dense Adam with the reference's learning-rate schedule, the step
// loop, validation, checkpoints and the train log (docs/training.md, docs/queries.md
// §4).
//
// # The loop
//
// The train queries are split into two pools (docs/training.md §2): path (a plain chain of
// projections from one anchor: 1p, 2p, 3p, and any custom structure of that shape) and
// other (everything with an intersection, a negation or a union). Each pool has a loader
// that visits its queries in a shuffled order, reshuffled every epoch, cycling forever;
// as with PyTorch's DataLoader(shuffle=True, drop_last=False), batches do not straddle
// epochs, so the last batch of an epoch holds what is left. At each visit a query gets
// one positive drawn uniformly from its train answers and k negatives drawn as the
// reference's dataloader does (rounds of 2k uniform entities, answers rejected, the
// surplus of the last round dropped), and the weight (4 + |answers|)^(−1/2).
//
// Step s (0-based, s = 0 … Steps−1) makes three updates, on a path, an other and a path
// batch; one update (path) when the other pool is empty, or (other) when the path pool
// is. An update zeroes the gradients (cheaply: the touched table rows and the small
// tensors), runs the loss forward and backward, and applies Adam (adam.go) to every
// parameter. After the updates the schedule (schedule.go) may divide the learning rate
// by 5 and recreate Adam; then validation may run (eval.RankQueries on the valid file,
// the same function the rank stage uses), and a checkpoint and the train log are
// written every CheckpointEvery steps and at the end. Each pool's batches are sampled
// ahead on a goroutine of its own (sampler.go), and a step's losses are read once the
// next step's updates are enqueued (a step that validates, checkpoints or stops reads its
// own at once): on a device the next update is always queued behind the running one.
//
// # Where the updates run
//
// The loop does not know the device. An Updater (updater.go) carries out the updates:
// Update (enqueue one; its wait returns the loss), ResetAdam (the schedule's drop),
// RestoreAdam (a resumed checkpoint's optimiser), Download (bring the host's parameters,
// and for a checkpoint Adam's moments, up to date) and Ranker (validation on the device).
// The CPU updater updates the host model in place, so Download is a no-op; the CUDA one
// (package gpumodel's TrainDevice, Options.Device) keeps the parameters, gradients and
// moments on the device and the host's Adam counts its steps per tensor. The host's model
// and Adam are what checkpoints hold, so a run resumes across devices.
//
// # Files
//
//	options.go       Options, Result, the output checks
//	setup.go         set-up and resume: inputs read and checked, model, optimiser, restore
//	train.go         Run and the trainer's state
//	loop.go          the step loop and one update
//	validate.go      validation and its log rows
//	checkpoint.go    the checkpoint's state key, assembling and writing checkpoints and logs
//	updater.go       the Updater and Device interfaces, the CPU updater
//	sampler.go       each pool's batches sampled ahead on a goroutine
//	adam*.go, schedule.go, data.go, config.go, guard.go, timing.go, prefault.go: the parts
//	gcpace.go, hugepages_*.go: memory on large graphs (GC headroom, huge pages)
//
// # Determinism and resuming
//
// Every random draw comes from a PCG generator seeded from Config.Seed: the model's
// initialisation, one sampler per pool (positives and negatives), one shuffle per pool
// and epoch (rebuilt from the seed, the pool and the epoch), and the dropout masks. A
// checkpoint holds the parameters, Adam's moments and step count, the generators'
// states, the loaders' epochs and positions, the schedule and the configuration, so a
// run resumed from it continues bit for bit as if it had not stopped. The number of
// workers changes nothing: Adam is element-wise, validation is per query.
//
// # Deviations from the reference, and choices
//
//   - Adam updates every tensor at every update, also the intersection's weights during
//     path batches (their gradient is then zero, their moments decay and they keep
//     moving), as PyTorch 1.x does, whose zero_grad zeroes rather than frees gradients.
//     Like PyTorch, it skips a tensor that no backward pass has reached yet (.grad None:
//     the intersection's weights in a run's first update, a path batch) and counts each
//     tensor's steps from its first gradient (Adam.DeferStart, Reach; checked against
//     QE-ConE by TestParityAdam). With set_to_none (PyTorch ≥ 2.0) they would be skipped
//     in every path update; this follows PyTorch 1.x, ConE's.
//   - The checkpoint's step is the number of completed steps; the reference saves the
//     index of the last step, and its restore runs that step again.
//   - On restore the reference keeps the saved learning rate and warm_up_steps but
//     takes max_steps and valid_steps from the command line; so does this package (a
//     resumed run may raise Steps; the ×4 of the validation interval happens once).
//   - A final validation runs after the last step (the reference runs a final test
//     evaluation instead); validation uses every type in the valid file.
//   - Custom structures join a pool by shape (see IsPath).
package train
