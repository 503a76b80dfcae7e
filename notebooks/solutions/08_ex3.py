_err = {p: abs(np.log(rows[p]["p95_ms"] / ARTICLE_FIGURES_MS[p])) for p in EVOLUTION}
ex3_preset = min(_err, key=_err.get)
print(ex3_preset, {p: round(float(np.exp(e)), 2) for p, e in _err.items()})
