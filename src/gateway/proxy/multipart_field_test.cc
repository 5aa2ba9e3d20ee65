#include "gateway/proxy/multipart_field.h"

#include <gtest/gtest.h>

#include <string>

namespace warmroute::gateway {
namespace {

std::string Part(std::string_view name, std::string_view value, std::string_view extra = "") {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"" + std::string(name) + "\"" +
         std::string(extra) + "\r\n\r\n" + std::string(value) + "\r\n";
}

TEST(MultipartBoundaryTest, ReadsQuotedAndBareBoundaries) {
  EXPECT_EQ(*MultipartBoundary("multipart/form-data; boundary=XyZ"), "XyZ");
  EXPECT_EQ(*MultipartBoundary("Multipart/Form-Data;boundary=\"a b\"; charset=x"), "a b");
  for (const char* bad : {"application/json", "multipart/form-data", "multipart/form-data; x=1",
                          "multipart/mixed; boundary=XyZ", ""}) {
    EXPECT_EQ(MultipartBoundary(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(FindFormFieldTest, FindsTheFieldWhereverItIsOnceItIsComplete) {
  const std::string body = Part("file", std::string(5000, '\0'), "; filename=\"a.wav\"") +
                           Part("model", "whisper-1") + Part("language", "en") + "--XyZ--\r\n";
  const FormFieldSearch found = FindFormField(body, "XyZ", "model");
  EXPECT_EQ(found.state, FormFieldSearch::kFound);
  EXPECT_EQ(found.value, "whisper-1");
  // Every prefix that ends before the model's value is complete asks for more.
  const size_t value_end = body.find("whisper-1") + 9 + 2;
  for (size_t n = 0; n < value_end; n += 97) {
    EXPECT_EQ(FindFormField(body.substr(0, n), "XyZ", "model").state, FormFieldSearch::kNeedMore)
        << n;
  }
  EXPECT_EQ(FindFormField(body.substr(0, value_end + 5), "XyZ", "model").value, "whisper-1");
}

TEST(FindFormFieldTest, ABodyThatEndsWithoutTheFieldHasNone) {
  const std::string body = Part("file", "abc") + "--XyZ--\r\n";
  EXPECT_EQ(FindFormField(body, "XyZ", "model").state, FormFieldSearch::kMissing);
  EXPECT_EQ(FindFormField("", "XyZ", "model").state, FormFieldSearch::kNeedMore);
}

TEST(FindFormFieldTest, ANameInsideAnotherPartsContentIsNotTheField) {
  const std::string body = Part("prompt", "name=\"model\"\r\n\r\nfake") + Part("model", "real");
  EXPECT_EQ(FindFormField(body + "--XyZ--", "XyZ", "model").value, "real");
}

}  // namespace
}  // namespace warmroute::gateway
