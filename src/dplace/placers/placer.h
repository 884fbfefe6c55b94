// A classical placer: a method that places once, with no budget and no
// environment (method.h). Implementations override PlaceOps and register
// with REGISTER_METHOD:
//
//   class EtfPlacer : public Placer {
//    public:
//     EtfPlacer() : Placer("m-etf") {}
//     StatusOr<Placement> PlaceOps(const PlacementProblem& p) override;
//   };
//   REGISTER_METHOD("m-etf", 31, "one line", NoOptions<EtfPlacer>("m-etf"));
#ifndef DPLACE_PLACERS_PLACER_H_
#define DPLACE_PLACERS_PLACER_H_

#include <memory>
#include <string>

#include "dplace/method/method.h"

namespace dplace {

class Placer : public Method {
 public:
  using Method::Method;

 protected:
  // The placement of `problem`, or an error saying why there is none
  // (kInfeasible when nothing fits); Place prefixes "method NAME: ".
  virtual StatusOr<Placement> PlaceOps(const PlacementProblem& problem) = 0;

 private:
  StatusOr<PlaceResult> DoPlace(const PlacementProblem& problem,
                                const PlaceContext& context) final;
};

// The traits of a placer that calls no library with process-wide state
// (MethodTraits::thread_safe): its traits() returns this.
inline MethodTraits ThreadSafePlacerTraits() {
  MethodTraits traits;
  traits.thread_safe = true;
  return traits;
}

// A factory for placers that take no options: rejects every option. T is
// constructed from the method's name.
template <typename T>
MethodFactory NoOptions(const char* name) {
  return
      [name](
          const MethodOptions& options) -> StatusOr<std::unique_ptr<Method>> {
        OptionReader reader(name, options);
        DPLACE_RETURN_IF_ERROR(reader.Finish());
        return std::unique_ptr<Method>(new T(name));
      };
}

}  // namespace dplace

#endif  // DPLACE_PLACERS_PLACER_H_
