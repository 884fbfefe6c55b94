// Test helpers shared by the placers' tests: a placement problem that owns
// its graph, cluster and cost model, and running a placer by name.
#ifndef DPLACE_TESTING_PLACER_TEST_UTIL_H_
#define DPLACE_TESTING_PLACER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dplace/placers/placer.h"

namespace dplace {

struct PlacerTestProblem {
  PlacerTestProblem(Graph g, Cluster c)
      : graph(std::move(g)), cluster(std::move(c)), cost(graph, cluster) {
    problem.graph = &graph;
    problem.cluster = &cluster;
    problem.cost = &cost;
  }
  Graph graph;
  Cluster cluster;
  CostModel cost;
  PlacementProblem problem;
};

// The placer `method` with `options` ("key=value") on `problem`.
inline StatusOr<Placement> TryPlace(
    const std::string& method, const PlacementProblem& problem,
    const std::vector<std::string>& options = {}) {
  DPLACE_ASSIGN_OR_RETURN(std::unique_ptr<Method> placer,
                          MakeMethod(method, *MethodOptions::Parse(options)));
  DPLACE_ASSIGN_OR_RETURN(PlaceResult placed, placer->Place(problem));
  return std::move(placed.placement);
}

// TryPlace, expecting success and a valid placement; empty on failure.
inline Placement Place(const std::string& method,
                       const PlacementProblem& problem,
                       const std::vector<std::string>& options = {}) {
  StatusOr<Placement> placement = TryPlace(method, problem, options);
  EXPECT_TRUE(placement.ok()) << method << ": " << placement.status().message();
  if (!placement.ok()) return {};
  EXPECT_TRUE(
      ValidatePlacement(*problem.graph, *problem.cluster, *placement).ok());
  return *placement;
}

}  // namespace dplace

#endif  // DPLACE_TESTING_PLACER_TEST_UTIL_H_
