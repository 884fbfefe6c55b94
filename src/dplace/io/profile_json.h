// The profile JSON format (docs/formats.md): measured op times that
// override the roofline cost model.
#ifndef DPLACE_IO_PROFILE_JSON_H_
#define DPLACE_IO_PROFILE_JSON_H_

#include <string>

#include "dplace/cost/cost_model.h"

namespace dplace {

StatusOr<ProfileTable> ParseProfileJson(const std::string& text,
                                        const std::string& source);
StatusOr<ProfileTable> ReadProfileJson(const std::string& path);
// The table of a --profile option: read from `path`, or the empty table
// (the roofline cost model alone) when `path` is empty.
StatusOr<ProfileTable> LoadProfile(const std::string& path);

// The table as a profile JSON document (keys sorted; times exact, so
// ParseProfileJson gives the same table back).
std::string ProfileToJson(const ProfileTable& table);

}  // namespace dplace

#endif  // DPLACE_IO_PROFILE_JSON_H_
