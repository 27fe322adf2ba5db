# Shared by the tests that run the documentation's examples: `source "$here/readme_example.sh"`,
# then
#   readme_example docs/library.md example.c > example.c
# prints the fenced code block of the Markdown file whose first line names the file ("/* example.c:
# ..." or "# plot_frame.py: ..."), so that the tests build and run what the page shows.
# Fails (status 1, a message on stderr) when there is no such block or more than one.
readme_example() { # readme_example MARKDOWN_FILE FILE
    awk -v file="$2" '
        /^```/ {
            if (!inside) { inside = 1; first = 1; next }
            inside = 0
            if (taking) { taking = 0; done++ }
            next
        }
        inside && first {
            first = 0
            if (index($0, "/* " file ":") == 1 || index($0, "# " file ":") == 1) taking = 1
        }
        inside && taking { print }
        END {
            if (done != 1) {
                printf "readme_example: %d code blocks of %s name %s (want 1)\n", done, FILENAME, file > "/dev/stderr"
                exit 1
            }
        }' "$1"
}
