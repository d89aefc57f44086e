#include "screenshot.h"

#include <GL/gl.h>
#include <fmt/format.h>
#include <stb/stb_image_write.h>

#include <cstring>
#include <vector>

namespace ds::view {

std::string write_screenshot(const std::string& path, int width, int height) {
  const std::size_t stride = std::size_t(width) * 4;
  std::vector<unsigned char> px(stride * std::size_t(height));
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  if (const GLenum e = glGetError(); e != GL_NO_ERROR)
    return fmt::format("glReadPixels failed (GL error {:#x})", e);
  // OpenGL's rows run bottom-up; PNG's top-down.
  std::vector<unsigned char> row(stride);
  for (int y = 0; y < height / 2; ++y) {
    unsigned char* a = px.data() + std::size_t(y) * stride;
    unsigned char* b = px.data() + std::size_t(height - 1 - y) * stride;
    std::memcpy(row.data(), a, stride);
    std::memcpy(a, b, stride);
    std::memcpy(b, row.data(), stride);
  }
  for (std::size_t i = 3; i < px.size(); i += 4) px[i] = 255;  // opaque, whatever the framebuffer's alpha
  if (!stbi_write_png(path.c_str(), width, height, 4, px.data(), int(stride)))
    return fmt::format("cannot write {}", path);
  return {};
}

}  // namespace ds::view
