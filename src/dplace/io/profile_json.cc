#include "dplace/io/profile_json.h"

#include "dplace/io/file.h"
#include "dplace/io/json_fields.h"

namespace dplace {
namespace {

using io_internal::FieldReader;
using io_internal::json;

using TimeTable =
    std::unordered_map<std::string, std::unordered_map<DeviceKind, double>>;

// {"MatMul": {"gpu": 1.2e-4, "cpu": 3e-3}, ...}
Status ReadTimes(const json* object, const std::string& path,
                 TimeTable* table) {
  if (!object) return Status::Ok();
  for (auto it = object->begin(); it != object->end(); ++it) {
    FieldReader f(*it, path + "[\"" + it.key() + "\"]");
    for (DeviceKind kind : {DeviceKind::kCpu, DeviceKind::kGpu}) {
      const std::string key(DeviceKindName(kind));
      if (it->is_object() && it->contains(key)) {
        (*table)[it.key()][kind] = f.Number(key.c_str(), 0.0);
      }
    }
    DPLACE_RETURN_IF_ERROR(f.Finish());
  }
  return Status::Ok();
}

StatusOr<ProfileTable> ParseProfile(const json& root) {
  FieldReader f(root, "");
  io_internal::CheckFormat(f, "dplace.profile");
  const json* by_type = f.Object("by_type", false);
  const json* by_name = f.Object("by_name", false);
  DPLACE_RETURN_IF_ERROR(f.Finish());
  ProfileTable table;
  DPLACE_RETURN_IF_ERROR(ReadTimes(by_type, "by_type", &table.by_type));
  DPLACE_RETURN_IF_ERROR(ReadTimes(by_name, "by_name", &table.by_name));
  return table;
}

json TimesToJson(const TimeTable& table) {
  json out = json::object();
  for (const auto& [key, times] : table) {
    json entry = json::object();
    for (const auto& [kind, seconds] : times) {
      entry[std::string(DeviceKindName(kind))] = seconds;
    }
    out[key] = std::move(entry);
  }
  return out;
}

}  // namespace

StatusOr<ProfileTable> ParseProfileJson(const std::string& text,
                                        const std::string& source) {
  return io_internal::ParseDocument<ProfileTable>(text, source, ParseProfile);
}

StatusOr<ProfileTable> ReadProfileJson(const std::string& path) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseProfileJson(text, path);
}

StatusOr<ProfileTable> LoadProfile(const std::string& path) {
  if (path.empty()) return ProfileTable{};
  return ReadProfileJson(path);
}

std::string ProfileToJson(const ProfileTable& table) {
  json root = {{"format", "dplace.profile"}, {"version", 1}};
  if (!table.by_type.empty()) root["by_type"] = TimesToJson(table.by_type);
  if (!table.by_name.empty()) root["by_name"] = TimesToJson(table.by_name);
  return root.dump(2) + "\n";
}

}  // namespace dplace
