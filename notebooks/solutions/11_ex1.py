# Solution to exercise 1 of 11_serving_llms: the replica's pages, divided by a sequence's whole pages.
# make_replica leaves 90% of each MI300X's 192 GB minus its quarter of the weights for KV; a
# 12,340-token sequence takes ceil(12,340 / 16) = 772 pages (12,352 tokens: the last page is
# partly empty, which is why dividing the capacity in tokens by 12,340 overcounts by one).
_rep = make_replica("llama3_70b", "mi300x", tp=4)
_per_seq = -(-12_340 // _rep.block_size)
ex1_sequences = _rep.kv_blocks // _per_seq
print(f"{_rep.kv_blocks:,} pages / {_per_seq} pages per sequence -> {ex1_sequences} sequences")
