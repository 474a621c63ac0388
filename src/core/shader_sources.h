#ifndef FFNRT_SHADER_SOURCES_H
#define FFNRT_SHADER_SOURCES_H
/* Text of a file of shaders/ embedded at build time, or NULL. */
const char *ffnrt_shader_source(const char *name);
#endif
