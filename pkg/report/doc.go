// Package report turns evaluation results into what the metrics command prints and plots:
// statistics over seeds with bootstrap intervals over queries, the papers' published
// numbers, Markdown tables in the layout of the papers' tables, and plots.
//
// # Statistics over seeds
//
// The input is one [Run] per seed: a list of (query id, type, per-query metrics). A run can
// be built from per-query filtered rank lists with [RunFromRanks] (the per-query metrics come
// from eval.QueryMetrics), and per-(query, hard answer) rank rows, as a ranks artifact holds
// them, are grouped into such lists by [GroupRanks]. [Summarize] checks that every run covers
// exactly the same queries (same ids, same types) and computes, per type and for the two
// paper averages (EPFO: the 9 types of query.EPFOTypes, negation: the 5 of
// query.NegationTypes), following docs/queries.md §5:
//
//   - per seed, the type's metrics: the mean over its queries; a group average: the
//     unweighted mean of its types' metrics, computed only when every type of the group
//     has queries (as eval.Summary does);
//   - Mean: the mean of those per-seed values over seeds;
//   - Std: their sample standard deviation across seeds (divisor n−1). With one seed it is
//     not defined and is reported as 0; [Aggregate.Seeds] tells the two cases apart, and
//     the tables print no "±" with one seed;
//   - Lo, Hi: a bootstrap percentile interval over queries (default 95%, B = 1000
//     resamples). Each resample draws, within every type, as many queries as the type has,
//     uniformly with replacement; with several seeds the same query indices are used in
//     every seed and the resampled type means are averaged over seeds (equivalently, the
//     per-query metrics averaged over seeds are resampled). A group's replicate is the
//     unweighted mean of its types' replicates of the same resample. The interval is the
//     pair of (1−level)/2 and (1+level)/2 quantiles of the B replicates, with linear
//     interpolation between order statistics. The random numbers come from a PCG generator
//     seeded by [Options.Seed] and the type's name, so a type's interval depends only on
//     the seed, B and its own queries, not on the order of the input or on other types.
//
// The interval covers the sampling of queries only (how much the numbers would move on
// another test set of the same size); the spread across training seeds is what Std shows.
//
// All metrics are kept as raw fractions in [0, 1]; tables and plots show them ×100.
//
// # Published results
//
// [PublishedResults] and [LookupPublished] give the rows of docs/results.md §1 and §4: the
// RoConE paper's Tables 1–3 and seed standard deviations (marked [Paper]), and the FB15k
// rows recalled from the ConE and BetaE papers (marked [Memory]; to be verified).
//
// # Tables and plots
//
// [WriteMarkdown] writes the MRR table in the papers' column order (1p 2p 3p 2i 3i pi ip 2u
// up AVG | 2in 3in inp pin pni AVG), optionally with the published RoConE and ConE rows, and a
// Hits@1/3/10 table. Values are ×100, "mean ± std" with several seeds; a type without
// queries, or an average with a type missing, prints as "–". Other types we have (2u-DM,
// up-DM, custom structures) get extra columns after the papers' 16. [PlotMRR] draws a
// grouped bar chart per type and [PlotTraining] the training curves; both write PNG or
// SVG, chosen by the file extension, atomically (a temporary file in the same directory,
// renamed over the destination).
package report
