# embed.cmake - turn a text file into a C header holding it as a string:
#   cmake -DIN=<file> -DOUT=<header> -DNAME=<identifier> -P embed.cmake
# The review page's script and style live in viz/page.js and viz/page.css,
# where an editor and a linter can read them; html.c includes the generated
# header (C11 has no #embed, and a hand-escaped string literal drifts).
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.tmp" "/* generated from viz/${src} by viz/embed.cmake: edit that file */\nstatic const char ${NAME}[] = {\n${bytes}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
