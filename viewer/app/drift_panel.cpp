#include "app.h"
namespace ds::view {
void draw_drift(App&, float, float) {}
}
