# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P rs_embed.cmake: file's bytes as a C string.
file(READ "${IN}" RS_EMBED_HEX HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" RS_EMBED_ESC "${RS_EMBED_HEX}")
string(REGEX REPLACE "((\\\\x[0-9a-f][0-9a-f]){32})" "\\1\"\n    \"" RS_EMBED_ESC "${RS_EMBED_ESC}")
file(WRITE "${OUT}" "/* Generated from ${IN}: do not edit. */\nconst char ${NAME}[] =\n    \"${RS_EMBED_ESC}\";\n")
