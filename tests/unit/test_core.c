#include <criterion/criterion.h>
Test(core, placeholder) {
    cr_assert(1);
}
