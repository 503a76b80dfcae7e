# Solution to exercise 1 of 06_heterogeneous_hell: fix every problem the validator named, path by path.
ex1_manifest = yaml.safe_load(MANIFESTS.joinpath("invalid.yaml").read_text(encoding="utf-8"))
job = ex1_manifest["job"]
job["gpu_type"] = "mtia_v2"                        # job.gpu_type: tpu_v9 is not a device we have
job["pre_reserve"] = True                          # job.pre_reserve: a boolean, not "maybe"
job["graph"][0]["memory"] = "2.1GB"                # job.graph[0].memory: a size with a unit
attention = job["graph"][1]
attention["runtime"] = "800us"                     # job.graph[1].runtime: positive
del attention["interconect"]                       # job.graph[1].interconect: the typo, and
attention["interconnect"] = "pcie_5_x8"            # MTIA v2 has no NVLink: its link is PCIe 5 x8
job["graph"][2].update(layer="mlp", runtime="1ms")  # job.graph[2]: a name, and a non-zero runtime
print(validate_manifest(ex1_manifest) or "valid", reserve(parse_manifest(ex1_manifest)).notes or "(no notes)")
