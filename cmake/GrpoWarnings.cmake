# grpo_warnings(target): -Wall -Wextra (and friends) on the project's own code only.
function(grpo_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wconversion -Wno-sign-conversion)
  if(GRPO_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
