#pragma once
/// \file
/// \brief The live view page (live_view.html), embedded in the binary by the build.

namespace nanoserve::server {

/// \brief The HTML of `GET /` (defined in the generated live_view_page.cpp).
extern const char* const kLiveViewPage;

}  // namespace nanoserve::server
