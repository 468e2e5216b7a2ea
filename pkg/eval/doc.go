// Package eval implements the BetaE/ConE evaluation protocol for complex logical queries:
// filtered ranking of hard answers and the MRR / Hits@K metrics, aggregated per query type
// and averaged over the EPFO and negation type groups as in the papers' tables.
//
// The protocol is the one of docs/queries.md §5 (KGReasoning's test_step):
//
//  1. Every entity gets the model's score for the query (higher is better).
//  2. The filtered rank of an answer is 1 + the number of non-answers ranked above it; all
//     other answers, easy or hard, are removed from the competition (the "ρ_j − j + 1" rule).
//  3. Only the hard answers' ranks are kept.
//  4. Per query, MRR_q is the mean of 1/rank over the hard answers and Hits@K_q the fraction
//     of hard answers with rank ≤ K, for K = 1, 3, 10.
//  5. Metrics are averaged over the queries of a type; the EPFO average is the unweighted mean
//     over the 9 EPFO types and the negation average the unweighted mean over the 5 negation
//     types (query.EPFOTypes, query.NegationTypes).
//
// Ties. The reference code orders entities with a descending argsort, so ties fall wherever
// the sort puts them. This package fixes the order: entities are ranked by (score descending,
// entity id ascending). A non-answer whose score equals a hard answer's score is ranked above
// it exactly when its id is smaller. NaN scores are rejected with an error instead of giving
// ranks that mean nothing.
//
// Use a [Ranker] for ranking (it keeps scratch space between calls, so ranking does not
// allocate) and an [Accumulator] to collect ranks by query type; [Accumulator.Summary] gives
// the per-type metrics and the two paper averages. Everything is kept as raw fractions in
// [0, 1]. [Metrics.Percent] and [Summary.WriteTable] give the ×100 numbers the papers report.
package eval
