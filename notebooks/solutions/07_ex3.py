ex3_ratio = cut["lease_failure_rate"] / calm["lease_failure_rate"]
print(f"{ex3_ratio:.1f}x more refusals while half the cluster is cut off")
