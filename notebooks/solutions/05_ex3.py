# Whole-state last-writer-wins: the higher (generation, content) wins, nothing is OR-ed.
def _merge_whole_state(local, remote):
    return remote if remote.sort_key() > local.sort_key() else local


ex3_merge = _merge_whole_state
