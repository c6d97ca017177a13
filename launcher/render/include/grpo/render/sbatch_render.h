// Renders templates/sbatch.mustache (or any template text) with a core::SbatchView. A thin
// adapter around kainjow-mustache: the view's values are final script text (quoted or
// validated by the core), so the renderer never escapes anything. Variables:
// docs/sbatch-template.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grpo/core/result.h"
#include "grpo/job/sbatch_script.h"

namespace grpo::render {

// Errors: kParse (the template is not valid mustache; mustache's message, `template_name` as
// location), kInvalidValue (the template uses a variable the view does not have: a typo would
// otherwise render as nothing).
core::Result<std::string> render_sbatch(std::string_view template_text,
                                        const core::SbatchView& view,
                                        std::string_view template_name = "sbatch.mustache");

// The variable names the view provides (top level, and "name"/"value" inside env), sorted.
const std::vector<std::string>& sbatch_variables();

}  // namespace grpo::render
