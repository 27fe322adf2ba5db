# Shared by the script tests: `source "$here/check.sh"`, then `check NAME STATUS` per check
# (STATUS 0 = pass); $passed and $failed count them.
passed=0
failed=0
check() { # check NAME STATUS
    if [[ "$2" -eq 0 ]]; then
        passed=$((passed + 1))
        echo "ok   $1"
    else
        failed=$((failed + 1))
        echo "FAIL $1"
    fi
}
