package nft

// SetChainBatch sets how many rules r gives nft at once when it writes new
// table chains ahead of a change (chainBatchRules), so that a test can see
// the batches with a few chains.
func SetChainBatch(r *Renderer, rules int) { r.chainBatch = rules }
