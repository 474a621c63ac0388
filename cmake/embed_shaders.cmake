# Writes OUTPUT: a C file that holds each file of SHADERS as a string, so
# that an installed library needs no shader files. Run with cmake -P.
file(WRITE "${OUTPUT}.tmp" "/* Generated from shaders/ by cmake/embed_shaders.cmake; do not edit. */\n#include \"core/shader_sources.h\"\n#include <string.h>\n\n")
string(REPLACE "|" ";" SHADERS "${SHADERS}") # passed |-separated
set(table "")
foreach(path IN LISTS SHADERS)
  get_filename_component(name "${path}" NAME)
  string(MAKE_C_IDENTIFIER "${name}" ident)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  file(APPEND "${OUTPUT}.tmp" "static const char shader_${ident}[] = {${bytes}0x00};\n")
  string(APPEND table "    {\"${name}\", shader_${ident}},\n")
endforeach()
file(APPEND "${OUTPUT}.tmp" "\nstatic const struct { const char *name; const char *text; } shader_table[] = {\n${table}};\n\n")
file(APPEND "${OUTPUT}.tmp" "const char *ffnrt_shader_source(const char *name)\n{\n    for (size_t i = 0; i < sizeof shader_table / sizeof shader_table[0]; i++)\n        if (strcmp(shader_table[i].name, name) == 0)\n            return shader_table[i].text;\n    return NULL;\n}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
