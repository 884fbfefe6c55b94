// The cluster JSON format (docs/formats.md): read, write, and load by name.
#ifndef DPLACE_IO_CLUSTER_JSON_H_
#define DPLACE_IO_CLUSTER_JSON_H_

#include <string>

#include "dplace/cluster/cluster.h"
#include "dplace/io/file.h"

namespace dplace {

StatusOr<Cluster> ParseClusterJson(const std::string& text,
                                   const std::string& source);
// `limits` bounds the file's size.
StatusOr<Cluster> ReadClusterJson(const std::string& path,
                                  const FileLimits& limits = {});

std::string ClusterToJson(const Cluster& cluster);

// A preset name ("k80x4") or a path to a cluster JSON file (ends in .json).
StatusOr<Cluster> LoadCluster(const std::string& name_or_path,
                              const FileLimits& limits = {});

}  // namespace dplace

#endif  // DPLACE_IO_CLUSTER_JSON_H_
