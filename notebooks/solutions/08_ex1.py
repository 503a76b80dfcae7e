# The n arcs of a ring with one uniform point per node are (nearly) independent exponentials
# of mean 1/n; the expected largest is H_n / n, i.e. H_n = 1 + 1/2 + ... + 1/n times the mean.
ex1_max_share = sum(1.0 / i for i in range(1, 5001))
