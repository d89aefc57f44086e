# cmake -DMUTANT=<name> -DPATCH=<kernels/mutants/name.patch> -DSOURCE_DIR=<repository root>
#       -DOUT_DIR=<dir> -DPATCH_PROGRAM=<patch> -P make_mutant.cmake
#
# Writes the sources of one kernel mutant (docs/mutants.md) into OUT_DIR: the production files its
# patch names (paths from the repository root, git's a/ and b/ prefixes), patched, and
# OUT_DIR/<name>.cu, the kernel file the mutant compiles: the patched production .cu (or the one its
# `kernel:` line names, when the patch changes headers only) with the mutant's plant() after it.
# Patched headers keep their names, next to <name>.cu, so that its quoted includes find them first.
# The build compiles <name>.cu with DSK_NS set to the mutant's namespace (kernels/common.cuh).
#
# The patch's leading text, before its first `--- ` line, is the mutant's description; its `plant:`
# line lists the KernelTable entries the mutant replaces, each by the function of the same name.
# A patch that no longer applies exactly (no fuzz; lines may have moved) fails with a message
# naming the mutant and its patch. Files are rewritten only when their text changes.
cmake_minimum_required(VERSION 3.25)

foreach(var MUTANT PATCH SOURCE_DIR OUT_DIR PATCH_PROGRAM)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make_mutant.cmake: -D${var}=... is required")
  endif()
endforeach()

function(fail)
  list(JOIN ARGV "" what)
  message(FATAL_ERROR "mutant ${MUTANT} (${PATCH}): ${what}")
endfunction()

if(NOT EXISTS "${PATCH}")
  fail("the patch file does not exist")
endif()
file(READ "${PATCH}" text)
string(PREPEND text "\n")  # so that a first line is found as "\n<line>" like every other

# The description: everything before the diff itself.
string(FIND "${text}" "\n--- " diff_at)
if(diff_at EQUAL -1)
  fail("no `--- ` line: not a unified diff")
endif()
string(SUBSTRING "${text}" 0 ${diff_at} header)
string(FIND "${header}" "\ndiff " git_at)
if(NOT git_at EQUAL -1)
  string(SUBSTRING "${header}" 0 ${git_at} header)
endif()
string(STRIP "${header}" header)
if(header STREQUAL "")
  fail("no description before the diff (what the bug is and where it must first be caught)")
endif()

# plant: <entry> [<entry> ...]
if(NOT header MATCHES "(^|\n)plant:([^\n]*)")
  fail("no `plant:` line naming the KernelTable entries it replaces")
endif()
string(STRIP "${CMAKE_MATCH_2}" entries)
string(REGEX REPLACE "[ \t]+" ";" entries "${entries}")
if(entries STREQUAL "")
  fail("its `plant:` line names no KernelTable entry")
endif()
set(kernel "")
if(header MATCHES "(^|\n)kernel:[ \t]*([^\n]*)")
  string(STRIP "${CMAKE_MATCH_2}" kernel)
endif()

# The files it patches, from its `+++ ` lines.
string(REGEX MATCHALL "\n\\+\\+\\+ [^\n\t]+" plus_lines "${text}")
set(files "")
foreach(line IN LISTS plus_lines)
  if(NOT line MATCHES "^\n\\+\\+\\+ b/(.+)$")
    string(STRIP "${line}" line)
    fail("`${line}`: name the file from the repository root with git's a/ and b/ prefixes, as `git diff` "
         "does (the patch is applied with -p1)")
  endif()
  string(STRIP "${CMAKE_MATCH_1}" f)
  list(APPEND files "${f}")
endforeach()
if(NOT files)
  fail("no `+++ ` line: not a unified diff")
endif()
set(sources ${files})
list(FILTER sources INCLUDE REGEX "\\.cu$")
if(kernel STREQUAL "")
  list(LENGTH sources n)
  if(NOT n EQUAL 1)
    list(JOIN sources ", " named)
    fail("it patches ${n} .cu files (${named}): a mutant is one kernel file, named by a `kernel:` "
         "line when the patch changes headers only")
  endif()
  set(kernel ${sources})
elseif(sources AND NOT sources STREQUAL kernel)
  fail("its `kernel:` line names ${kernel} but it patches ${sources}")
endif()
set(inputs ${files} ${kernel})
list(REMOVE_DUPLICATES inputs)
foreach(f IN LISTS inputs)
  if(NOT EXISTS "${SOURCE_DIR}/${f}")
    fail("${f}, a production file it names, does not exist")
  endif()
endforeach()

# Apply it to copies of those files: exactly (no fuzz), forward only (a patch that looks applied
# already is an error, not a reversal), no reject or backup files.
set(stage "${OUT_DIR}.stage")
file(REMOVE_RECURSE "${stage}")
foreach(f IN LISTS inputs)
  get_filename_component(dir "${stage}/${f}" DIRECTORY)
  file(MAKE_DIRECTORY "${dir}")
  file(COPY_FILE "${SOURCE_DIR}/${f}" "${stage}/${f}")
endforeach()
execute_process(
  COMMAND "${PATCH_PROGRAM}" --batch --forward --fuzz=0 --no-backup-if-mismatch --reject-file=-
          -p1 -d "${stage}" -i "${PATCH}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE "${stage}")
  string(STRIP "${out}${err}" why)
  list(JOIN inputs ", " patched)
  fail("the patch no longer applies to the production code (${patched}): re-express the bug against it "
       "(docs/mutants.md, \"Adding a mutant\").\n${PATCH_PROGRAM} says:\n${why}")
endif()

# <name>.cu: the patched kernel file, then the description and plant().
file(READ "${stage}/${kernel}" body)
string(REPLACE "\n" "\n// " described "${header}")
set(assignments "")
foreach(e IN LISTS entries)
  string(APPEND assignments "  t.${e} = ${e};\n")
endforeach()
get_filename_component(patch_name "${PATCH}" NAME)
string(APPEND body "
// The mutant, generated from kernels/mutants/${patch_name} (edit that file, not this one):
// ${described}
namespace DSK_NS {
void plant(dsk::KernelTable& t) {
${assignments}}
}  // namespace DSK_NS
")

# Write what changed; remove what a previous version of the patch left (a header it no longer
# patches would otherwise still be found first).
set(wanted "${MUTANT}.cu")
file(MAKE_DIRECTORY "${OUT_DIR}")
file(WRITE "${stage}/${MUTANT}.cu.new" "${body}")
file(COPY_FILE "${stage}/${MUTANT}.cu.new" "${OUT_DIR}/${MUTANT}.cu" ONLY_IF_DIFFERENT)
foreach(f IN LISTS files)
  if(f STREQUAL kernel)
    continue()
  endif()
  get_filename_component(name "${f}" NAME)
  if(name IN_LIST wanted)
    fail("it patches two files named ${name}")
  endif()
  list(APPEND wanted "${name}")
  file(COPY_FILE "${stage}/${f}" "${OUT_DIR}/${name}" ONLY_IF_DIFFERENT)
endforeach()
file(GLOB present RELATIVE "${OUT_DIR}" "${OUT_DIR}/*")
foreach(name IN LISTS present)
  if(NOT name IN_LIST wanted)
    file(REMOVE "${OUT_DIR}/${name}")
  endif()
endforeach()
file(REMOVE_RECURSE "${stage}")
